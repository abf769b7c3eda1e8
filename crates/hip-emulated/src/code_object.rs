//! AMD code objects (HSA ELF, code object v4-v6): their size from a bare
//! pointer (as `hipModuleLoadData` gets them), the processor they are for,
//! their symbols, dynamic relocations, and the kernels of the metadata note
//! (`NT_AMDGPU_METADATA`, MessagePack) with their argument layouts.

use std::collections::HashMap;

use object::elf;
use object::read::elf::{FileHeader, Rela, SectionHeader, Sym};
use object::LittleEndian as LE;
use rmpv::Value;

use crate::device::Arch;
use crate::error::{fail, Result, INVALID_IMAGE, NO_BINARY_FOR_GPU};

const EM_AMDGPU: u16 = 224;
const ELFOSABI_AMDGPU_HSA: u8 = 64;
const NT_AMDGPU_METADATA: u32 = 32;
const R_AMDGPU_ABS64: u32 = 3;
const R_AMDGPU_RELATIVE64: u32 = 13;
/// `e_ident[EI_ABIVERSION]` of code object v4, v5 and v6.
const ABI_VERSIONS: std::ops::RangeInclusive<u8> = 2..=4;
/// A code object larger than this is taken for garbage.
const MAX_IMAGE: u64 = 1 << 30;

/// One explicit or hidden argument of a kernel (`.args` of the metadata).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    pub offset: usize,
    pub size: usize,
    pub value_kind: String,
}

impl Arg {
    /// Hidden arguments are filled by the runtime, not given by the caller.
    pub fn hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

/// A kernel as the metadata note describes it.
#[derive(Clone, Debug)]
pub struct KernelMeta {
    pub name: String,
    /// The kernel descriptor's symbol (`name.kd`).
    pub symbol: String,
    pub args: Vec<Arg>,
    pub kernarg_segment_size: usize,
    pub max_flat_workgroup_size: u32,
    pub wavefront_size: u32,
}

/// A dynamic relocation the loader applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reloc {
    /// image[offset] = base + addend
    Relative { offset: u64, addend: i64 },
    /// image[offset] = base + symbol value + addend
    Absolute { offset: u64, value: u64, addend: i64 },
}

/// A parsed code object.
pub struct CodeObject {
    pub bytes: Vec<u8>,
    pub kernels: Vec<KernelMeta>,
    /// Defined data symbols (variables, kernel descriptors): name -> (value, size).
    pub symbols: HashMap<String, (u64, u64)>,
    pub relocations: Vec<Reloc>,
    /// Bytes the image spans once mapped: the highest end of a section
    /// with an address.
    pub extent: usize,
}

/// The size of the ELF image at `p`, from its headers.
///
/// # Safety
/// `p` must point at readable memory holding an ELF file (as for
/// `hipModuleLoadData`, which has no size either).
pub unsafe fn image_len(p: *const u8) -> Result<usize> {
    // SAFETY: the caller vouches for the header's 64 bytes.
    let head = unsafe { std::slice::from_raw_parts(p, 64) };
    if head.starts_with(b"__CLANG_OFFLOAD_BUNDLE__") || head.starts_with(b"CCOB") {
        fail!(INVALID_IMAGE, "clang offload bundles are not supported by the emulated runtime: pass a single code object");
    }
    if &head[..4] != b"\x7fELF" {
        fail!(INVALID_IMAGE, "not an ELF image (first bytes {:02x?})", &head[..4]);
    }
    if head[4] != 2 || head[5] != 1 {
        fail!(INVALID_IMAGE, "not a 64-bit little-endian ELF image");
    }
    let u16_at = |o: usize| u16::from_le_bytes([head[o], head[o + 1]]) as u64;
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or_default());
    let (phoff, shoff) = (u64_at(head, 32), u64_at(head, 40));
    let (phentsize, phnum, shentsize, shnum) = (u16_at(54), u16_at(56), u16_at(58), u16_at(60));
    let mut end = 64u64.max(phoff + phentsize * phnum).max(shoff + shentsize * shnum);
    if shentsize != 64 || end > MAX_IMAGE {
        fail!(INVALID_IMAGE, "ELF headers out of range (section table at {shoff:#x}, {shnum} entries of {shentsize} bytes)");
    }
    for i in 0..shnum {
        // SAFETY: the section table lies within the image the caller vouches for.
        let sh = unsafe { std::slice::from_raw_parts(p.add((shoff + i * 64) as usize), 64) };
        let sh_type = u32::from_le_bytes([sh[4], sh[5], sh[6], sh[7]]);
        if sh_type != elf::SHT_NOBITS {
            end = end.max(u64_at(sh, 24).saturating_add(u64_at(sh, 32)));
        }
    }
    for i in 0..phnum {
        // SAFETY: as above, for the program headers.
        let ph = unsafe { std::slice::from_raw_parts(p.add((phoff + i * phentsize) as usize), phentsize as usize) };
        if ph.len() >= 40 {
            end = end.max(u64_at(ph, 8).saturating_add(u64_at(ph, 32)));
        }
    }
    if end > MAX_IMAGE {
        fail!(INVALID_IMAGE, "ELF sections reach past {MAX_IMAGE} bytes");
    }
    Ok(end as usize)
}

fn bad(what: impl std::fmt::Display) -> crate::error::HipError {
    crate::error::HipError::new(INVALID_IMAGE, format!("malformed code object: {what}"))
}

impl CodeObject {
    /// Parses a code object for `arch`.
    pub fn parse(bytes: Vec<u8>, arch: Arch) -> Result<CodeObject> {
        let data = &bytes[..];
        let header = elf::FileHeader64::<LE>::parse(data).map_err(bad)?;
        let endian = header.endian().map_err(bad)?;
        if header.e_machine(endian) != EM_AMDGPU {
            fail!(INVALID_IMAGE, "ELF machine {} is not AMDGPU", header.e_machine(endian));
        }
        if header.e_ident().os_abi != ELFOSABI_AMDGPU_HSA || !ABI_VERSIONS.contains(&header.e_ident().abi_version) {
            fail!(
                INVALID_IMAGE,
                "not an HSA code object of version 4-6 (OS ABI {}, ABI version {})",
                header.e_ident().os_abi,
                header.e_ident().abi_version
            );
        }
        check_target(header.e_flags(endian), arch)?;
        let sections = header.sections(endian, data).map_err(bad)?;
        let extent = sections
            .iter()
            .filter(|s| s.sh_addr(endian) != 0)
            .map(|s| s.sh_addr(endian).saturating_add(s.sh_size(endian)))
            .max()
            .unwrap_or(0);
        if extent == 0 || extent > MAX_IMAGE {
            fail!(INVALID_IMAGE, "the code object maps {extent} bytes");
        }

        let mut symbols = HashMap::new();
        for kind in [elf::SHT_DYNSYM, elf::SHT_SYMTAB] {
            let table = sections.symbols(endian, data, kind).map_err(bad)?;
            for sym in table.iter() {
                // Variables and kernel descriptors are objects; code is not looked up.
                if sym.st_shndx(endian) == elf::SHN_UNDEF || sym.st_type() != elf::STT_OBJECT {
                    continue;
                }
                let name = String::from_utf8_lossy(table.symbol_name(endian, sym).map_err(bad)?).into_owned();
                if !name.is_empty() {
                    symbols.entry(name).or_insert((sym.st_value(endian), sym.st_size(endian)));
                }
            }
        }

        let mut relocations = Vec::new();
        for s in sections.iter() {
            let Some((relas, link)) = s.rela(endian, data).map_err(bad)? else { continue };
            let table = sections.symbol_table_by_index(endian, data, link).map_err(bad)?;
            for r in relas {
                let offset = r.r_offset(endian);
                let addend = r.r_addend(endian);
                match r.r_type(endian, false) {
                    R_AMDGPU_RELATIVE64 => relocations.push(Reloc::Relative { offset, addend }),
                    R_AMDGPU_ABS64 => {
                        let sym = table.symbol(object::SymbolIndex(r.r_sym(endian, false) as usize)).map_err(bad)?;
                        if sym.st_shndx(endian) == elf::SHN_UNDEF {
                            let name = table.symbol_name(endian, sym).map_err(bad)?;
                            fail!(INVALID_IMAGE, "the code object needs the undefined symbol `{}`", String::from_utf8_lossy(name));
                        }
                        relocations.push(Reloc::Absolute { offset, value: sym.st_value(endian), addend });
                    }
                    t => fail!(INVALID_IMAGE, "dynamic relocation type {t} is not supported by the emulated loader"),
                }
            }
        }

        let mut kernels = None;
        for s in sections.iter() {
            let Some(mut notes) = s.notes(endian, data).map_err(bad)? else { continue };
            while let Some(note) = notes.next().map_err(bad)? {
                if note.name() == b"AMDGPU" && note.n_type(endian) == NT_AMDGPU_METADATA {
                    kernels = Some(parse_metadata(note.desc())?);
                }
            }
        }
        let Some(kernels) = kernels else { fail!(INVALID_IMAGE, "the code object has no AMDGPU metadata note") };
        for k in &kernels {
            if !symbols.contains_key(&k.symbol) {
                fail!(INVALID_IMAGE, "kernel `{}`: its descriptor `{}` is not defined", k.name, k.symbol);
            }
        }
        Ok(CodeObject { bytes, kernels, symbols, relocations, extent: extent as usize })
    }
}

/// Checks `e_flags` (processor and target features) against the device.
fn check_target(flags: u32, arch: Arch) -> Result<()> {
    let mach = flags & 0xff;
    if mach != arch.elf_mach() {
        fail!(
            NO_BINARY_FOR_GPU,
            "the code object is for processor {mach:#x} (EF_AMDGPU_MACH), the device is {} ({:#x})",
            arch.gcn_arch_name(),
            arch.elf_mach()
        );
    }
    // Code object v4+: xnack in bits 8-9, sramecc in bits 10-11
    // (0 unsupported, 1 any, 2 off, 3 on).
    let xnack = (flags >> 8) & 3;
    let sramecc = (flags >> 10) & 3;
    if arch == Arch::Gfx90a && (xnack == 3 || sramecc == 2) {
        fail!(
            NO_BINARY_FOR_GPU,
            "the code object needs {}; the device is gfx90a:sramecc+:xnack-",
            if xnack == 3 { "xnack+" } else { "sramecc-" }
        );
    }
    Ok(())
}

fn get<'a>(map: &'a [(Value, Value)], key: &str) -> Option<&'a Value> {
    map.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
}

fn get_u64(map: &[(Value, Value)], key: &str) -> Option<u64> {
    get(map, key).and_then(Value::as_u64)
}

/// The kernels of the `amdhsa.kernels` list.
pub fn parse_metadata(desc: &[u8]) -> Result<Vec<KernelMeta>> {
    let root = rmpv::decode::read_value(&mut &desc[..]).map_err(|e| bad(format!("metadata: {e}")))?;
    let Some(root) = root.as_map() else { return Err(bad("metadata is not a map")) };
    let Some(list) = get(root, "amdhsa.kernels").and_then(Value::as_array) else {
        return Err(bad("metadata has no amdhsa.kernels"));
    };
    let mut kernels = Vec::new();
    for k in list {
        let Some(k) = k.as_map() else { return Err(bad("a kernel's metadata is not a map")) };
        let text = |key: &str| get(k, key).and_then(Value::as_str).map(str::to_string);
        let (Some(name), Some(symbol)) = (text(".name"), text(".symbol")) else {
            return Err(bad("a kernel without .name or .symbol"));
        };
        let mut args = Vec::new();
        for a in get(k, ".args").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
            let Some(a) = a.as_map() else { return Err(bad(format!("{name}: an argument is not a map"))) };
            let (Some(offset), Some(size)) = (get_u64(a, ".offset"), get_u64(a, ".size")) else {
                return Err(bad(format!("{name}: an argument without .offset or .size")));
            };
            let value_kind = get(a, ".value_kind").and_then(Value::as_str).unwrap_or("by_value").to_string();
            args.push(Arg { offset: offset as usize, size: size as usize, value_kind });
        }
        kernels.push(KernelMeta {
            kernarg_segment_size: get_u64(k, ".kernarg_segment_size").unwrap_or(0) as usize,
            max_flat_workgroup_size: get_u64(k, ".max_flat_workgroup_size").unwrap_or(1024) as u32,
            wavefront_size: get_u64(k, ".wavefront_size").unwrap_or(64) as u32,
            name,
            symbol,
            args,
        });
    }
    Ok(kernels)
}

/// A kernel descriptor (`amd_kernel_code_t` successor, 64 bytes at `name.kd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub group_segment_fixed_size: u32,
    pub private_segment_fixed_size: u32,
    pub kernarg_size: u32,
    pub entry_offset: i64,
    pub rsrc3: u32,
    pub rsrc1: u32,
    pub rsrc2: u32,
    pub properties: u16,
}

impl Descriptor {
    pub fn parse(kd: &[u8; 64]) -> Descriptor {
        let u32_at = |o: usize| u32::from_le_bytes([kd[o], kd[o + 1], kd[o + 2], kd[o + 3]]);
        let mut e = [0u8; 8];
        e.copy_from_slice(&kd[16..24]);
        Descriptor {
            group_segment_fixed_size: u32_at(0),
            private_segment_fixed_size: u32_at(4),
            kernarg_size: u32_at(8),
            entry_offset: i64::from_le_bytes(e),
            rsrc3: u32_at(44),
            rsrc1: u32_at(48),
            rsrc2: u32_at(52),
            properties: u16::from_le_bytes([kd[56], kd[57]]),
        }
    }

    /// `USES_DYNAMIC_STACK` (kernel code properties bit 11): calls whose
    /// depth the compiler could not bound.
    pub fn uses_dynamic_stack(&self) -> bool {
        self.properties & (1 << 11) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_flags_are_checked() {
        assert!(check_target(0x041, Arch::Gfx1100).is_ok());
        assert_eq!(check_target(0x03f, Arch::Gfx1100).map_err(|e| e.code), Err(NO_BINARY_FOR_GPU));
        // gfx90a with xnack any and sramecc any, then xnack on, then sramecc off.
        assert!(check_target(0x03f | 0x100 | 0x400, Arch::Gfx90a).is_ok());
        assert_eq!(check_target(0x03f | 0x300, Arch::Gfx90a).map_err(|e| e.code), Err(NO_BINARY_FOR_GPU));
        assert_eq!(check_target(0x03f | 0x800, Arch::Gfx90a).map_err(|e| e.code), Err(NO_BINARY_FOR_GPU));
    }

    #[test]
    fn descriptor_fields() {
        let mut kd = [0u8; 64];
        kd[0..4].copy_from_slice(&1024u32.to_le_bytes());
        kd[4..8].copy_from_slice(&48u32.to_le_bytes());
        kd[16..24].copy_from_slice(&(-256i64).to_le_bytes());
        kd[48..52].copy_from_slice(&0x00af_0000u32.to_le_bytes());
        kd[56..58].copy_from_slice(&0x0c0au16.to_le_bytes());
        let d = Descriptor::parse(&kd);
        assert_eq!(d.group_segment_fixed_size, 1024);
        assert_eq!(d.private_segment_fixed_size, 48);
        assert_eq!(d.entry_offset, -256);
        assert_eq!(d.rsrc1, 0x00af_0000);
        assert!(d.uses_dynamic_stack());
    }

    #[test]
    fn garbage_is_not_an_image() {
        let junk = [0x55u8; 64];
        // SAFETY: 64 readable bytes.
        assert_eq!(unsafe { image_len(junk.as_ptr()) }.map_err(|e| e.code), Err(INVALID_IMAGE));
    }
}
