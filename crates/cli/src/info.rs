//! `anycuda info`: the devices as CUDA programs see them, from the same
//! driver core and backend that `libcuda.so.1` runs on, built in process.

use std::process::ExitCode;
use std::sync::Arc;

pub fn info() -> ExitCode {
    let drv = driver::Driver::new(Arc::new(backend_cpu::CpuBackend::new()), driver::Config::from_env());
    let version = drv.driver_version();
    println!("anycuda {}", env!("CARGO_PKG_VERSION"));
    println!("driver version: {}.{} ({version})", version / 1000, (version % 1000) / 10);
    println!("backend: {}", drv.backend().name());
    match jit::cache::default_dir() {
        Some(d) => println!("kernel cache: {}", d.display()),
        None => println!("kernel cache: off ({} is off, or no home directory)", jit::cache::CACHE_DIR_ENV),
    }
    match crate::run::find_library() {
        Ok(p) => println!("library: {}", p.display()),
        Err(e) => println!("library: not found: {e}"),
    }
    if let Err(e) = drv.init(0) {
        eprintln!("anycuda info: cuInit failed: {e}");
        return ExitCode::FAILURE;
    }
    let count = match drv.device_count() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("anycuda info: cuDeviceGetCount failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("devices: {count}");
    for dev in 0..count {
        let p = match drv.device_props(dev) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("anycuda info: device {dev}: {e}");
                return ExitCode::FAILURE;
            }
        };
        println!();
        println!("device {dev}: {}", p.name);
        println!("  compute capability:        {}.{}", p.cc_major, p.cc_minor);
        println!("  memory:                    {} ({} bytes)", human(p.total_mem), p.total_mem);
        println!("  multiprocessors:           {}", p.multiprocessor_count);
        println!("  max threads per block:     {}", p.max_threads_per_block);
        println!("  max block dimensions:      {} x {} x {}", p.max_block_dim[0], p.max_block_dim[1], p.max_block_dim[2]);
        println!("  max grid dimensions:       {} x {} x {}", p.max_grid_dim[0], p.max_grid_dim[1], p.max_grid_dim[2]);
        println!(
            "  shared memory per block:   {} (opt-in up to {}; {} per multiprocessor)",
            human(p.shared_mem_per_block as u64),
            human(p.shared_mem_per_block_optin as u64),
            human(p.shared_mem_per_multiprocessor as u64)
        );
        println!("  constant memory:           {}", human(p.total_constant_mem as u64));
        println!("  warp size:                 {}", p.warp_size);
        println!("  max threads per processor: {}", p.max_threads_per_multiprocessor);
        println!("  clock rate:                {} MHz", p.clock_rate_khz / 1000);
        println!("  L2 cache:                  {}", human(p.l2_cache_size as u64));
        println!("  cooperative launch:        {}", if p.cooperative_launch { "yes" } else { "no" });
        println!("  integrated (host memory):  {}", if p.integrated { "yes" } else { "no" });
        println!("  PCI bus id:                {}", p.pci_bus_id());
        println!("  UUID:                      {}", uuid(&p.uuid));
    }
    ExitCode::SUCCESS
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} bytes")
    } else if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, as nvidia-smi writes UUIDs.
fn uuid(b: &[u8; 16]) -> String {
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("GPU-{}-{}-{}-{}-{}", h[0..4].concat(), h[4..6].concat(), h[6..8].concat(), h[8..10].concat(), h[10..16].concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(human(100), "100 bytes");
        assert_eq!(human(49152), "48 KiB");
        assert_eq!(human(1536 << 20), "1.5 GiB");
    }
}
