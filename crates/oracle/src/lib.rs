//! The PTX oracle: instruction cases whose outputs were recorded on an
//! NVIDIA H200 (`tests/ptx-oracle`, see its README). This crate reads the
//! cases, prepares each launch (buffers, parameters, grid) independently of
//! how it is run, and compares results the way the README specifies.

use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
pub struct Oracle {
    pub recorded_on: serde_json::Value,
    pub cases: Vec<Case>,
}

#[derive(Debug, Deserialize, Clone)]
pub struct Buffer {
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default)]
    pub hex: String,
}

#[derive(Debug, Deserialize, Clone)]
pub struct Case {
    pub family: String,
    pub kernel: String,
    #[serde(default)]
    pub n: u32,
    #[serde(default)]
    pub inputs: Vec<Buffer>,
    #[serde(default)]
    pub outputs: Vec<Buffer>,
    pub compare: String,
    #[serde(default)]
    pub custom: bool,
    #[serde(default)]
    pub grid: Option<[u32; 3]>,
    #[serde(default)]
    pub block: serde_json::Value,
    #[serde(default)]
    pub shared: u32,
    #[serde(default)]
    pub out_words: Vec<u32>,
    #[serde(default)]
    pub out_init_hex: Option<String>,
    pub expected_hex: Vec<String>,
    #[serde(default)]
    pub bounds_hex: Vec<String>,
}

/// The folder holding the oracle (`tests/ptx-oracle` of the repository).
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ptx-oracle")
}

pub fn load() -> Result<Oracle, String> {
    let path = data_dir().join("cases.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The PTX source of a family.
pub fn module_source(family: &str) -> Result<String, String> {
    let path = data_dir().join(format!("{family}.ptx"));
    std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Bytes per element of an oracle type (predicates are stored as u32).
pub fn type_size(ty: &str) -> Option<usize> {
    Some(match ty {
        "u8" | "s8" => 1,
        "b16" | "u16" | "s16" | "f16" | "bf16" => 2,
        "pred" | "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" => 4,
        "b64" | "u64" | "s64" | "f64" => 8,
        _ => return None,
    })
}

/// Decodes a hex array of `size`-byte elements (most significant digit
/// first per element) into little-endian memory.
pub fn decode(hex: &str, size: usize) -> Result<Vec<u8>, String> {
    if !hex.len().is_multiple_of(2 * size) {
        return Err(format!("hex length {} is not a multiple of {}", hex.len(), 2 * size));
    }
    let mut out = Vec::with_capacity(hex.len() / 2);
    for chunk in hex.as_bytes().chunks(2 * size) {
        let s = std::str::from_utf8(chunk).map_err(|e| e.to_string())?;
        let v = u128::from_str_radix(s, 16).map_err(|e| format!("{s}: {e}"))?;
        out.extend_from_slice(&v.to_le_bytes()[..size]);
    }
    Ok(out)
}

/// One argument of a launch: a device buffer or a 32-bit value.
#[derive(Debug, Clone)]
pub enum Arg {
    /// Index into [`Launch::buffers`].
    Buffer(usize),
    U32(u32),
}

/// Everything needed to run a case, independent of the backend.
#[derive(Debug, Clone)]
pub struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    /// Initial contents of each device buffer.
    pub buffers: Vec<Vec<u8>>,
    pub args: Vec<Arg>,
    /// Indices of the buffers whose final contents are compared, in order.
    pub outputs: Vec<usize>,
}

impl Case {
    pub fn launch(&self) -> Result<Launch, String> {
        if self.custom {
            let grid = self.grid.ok_or("custom case without grid")?;
            let block: [u32; 3] = serde_json::from_value(self.block.clone()).map_err(|e| e.to_string())?;
            let input = decode(&self.inputs.first().ok_or("custom case without input")?.hex, 4)?;
            let words = |i: usize| self.out_words.get(i).copied().unwrap_or(0) as usize;
            let mut out = vec![0u8; words(0) * 4];
            if let Some(init) = &self.out_init_hex {
                let init = decode(init, 4)?;
                let k = init.len().min(out.len());
                out[..k].copy_from_slice(&init[..k]);
            }
            let out2 = vec![0u8; words(1) * 4];
            return Ok(Launch {
                grid,
                block,
                shared: self.shared,
                buffers: vec![input, out, out2],
                args: vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::U32(self.n)],
                outputs: vec![1, 2],
            });
        }
        let mut buffers = Vec::new();
        let mut args = Vec::new();
        for i in &self.inputs {
            let size = type_size(&i.ty).ok_or_else(|| format!("unknown type {}", i.ty))?;
            buffers.push(decode(&i.hex, size)?);
            args.push(Arg::Buffer(buffers.len() - 1));
        }
        let mut outputs = Vec::new();
        for o in &self.outputs {
            let size = type_size(&o.ty).ok_or_else(|| format!("unknown type {}", o.ty))?;
            // Filled with 0xCD, as on the hardware run, so unwritten elements show.
            buffers.push(vec![0xCD; size * self.n as usize]);
            args.push(Arg::Buffer(buffers.len() - 1));
            outputs.push(buffers.len() - 1);
        }
        args.push(Arg::U32(self.n));
        Ok(Launch { grid: [self.n.div_ceil(128), 1, 1], block: [128, 1, 1], shared: 0, buffers, args, outputs })
    }

    /// Compares the final contents of the output buffers with the recorded
    /// ones. `Err` describes the first mismatches.
    pub fn check(&self, results: &[Vec<u8>]) -> Result<(), String> {
        match self.compare.as_str() {
            "nocrash" => Ok(()),
            "bits" => self.check_elements(results, |_, exp, got, _| exp == got),
            "float" => self.check_elements(results, |ty, exp, got, _| float_eq(ty, exp, got)),
            "tol" => self.check_elements(results, |ty, _, got, bounds| within(ty, got, bounds)),
            "out_first_word_then_sorted" => {
                let exp0 = decode(&self.expected_hex[0], 4)?;
                if results[0].get(..4) != exp0.get(..4) {
                    return Err(format!("out[0]: expected {:02x?}, got {:02x?}", &exp0[..4], results[0].get(..4)));
                }
                let mut exp1: Vec<u32> = words(&decode(&self.expected_hex[1], 4)?);
                let mut got1: Vec<u32> = words(&results[1]);
                exp1.sort_unstable();
                got1.sort_unstable();
                if exp1 != got1 {
                    return Err("out2 differs as a sorted multiset".into());
                }
                Ok(())
            }
            other => Err(format!("unknown compare mode {other}")),
        }
    }

    fn output_type(&self, i: usize) -> String {
        if self.custom {
            "u32".into()
        } else {
            self.outputs.get(i).map(|o| o.ty.clone()).unwrap_or_default()
        }
    }

    fn check_elements(&self, results: &[Vec<u8>], ok: impl Fn(&str, u128, u128, Option<(u128, u128)>) -> bool) -> Result<(), String> {
        let mut errors = Vec::new();
        for (i, exp_hex) in self.expected_hex.iter().enumerate() {
            let ty = self.output_type(i);
            let size = type_size(&ty).ok_or_else(|| format!("unknown type {ty}"))?;
            let exp = decode(exp_hex, size)?;
            let got = results.get(i).ok_or("missing output")?;
            if got.len() != exp.len() {
                return Err(format!("output {i}: {} bytes, expected {}", got.len(), exp.len()));
            }
            let bounds = match self.bounds_hex.get(i) {
                Some(b) => Some(decode(b, size)?),
                None => None,
            };
            for (k, (e, g)) in exp.chunks(size).zip(got.chunks(size)).enumerate() {
                let e = le(e);
                let g = le(g);
                let bd =
                    bounds.as_ref().map(|b| (le(&b[2 * k * size..(2 * k + 1) * size]), le(&b[(2 * k + 1) * size..(2 * k + 2) * size])));
                if !ok(&ty, e, g, bd) && errors.len() < 8 {
                    let input: Vec<String> = self
                        .inputs
                        .iter()
                        .filter_map(|inp| {
                            let s = type_size(&inp.ty)?;
                            inp.hex.get(k * 2 * s..(k + 1) * 2 * s).map(|h| h.to_string())
                        })
                        .collect();
                    errors.push(format!("out{i}[{k}]: expected {e:0w$x}, got {g:0w$x} (inputs {})", input.join(" "), w = 2 * size));
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}

fn le(b: &[u8]) -> u128 {
    let mut v = [0u8; 16];
    v[..b.len()].copy_from_slice(b);
    u128::from_le_bytes(v)
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Per-16-bit-half or whole-element float comparison: equal bits, or both NaN.
fn float_eq(ty: &str, exp: u128, got: u128) -> bool {
    match ty {
        "f16x2" => halves(exp, got, is_nan_f16),
        "bf16x2" => halves(exp, got, is_nan_bf16),
        "f16" => exp == got || (is_nan_f16(exp as u16) && is_nan_f16(got as u16)),
        "bf16" => exp == got || (is_nan_bf16(exp as u16) && is_nan_bf16(got as u16)),
        "f32" => exp == got || (f32::from_bits(exp as u32).is_nan() && f32::from_bits(got as u32).is_nan()),
        "f64" => exp == got || (f64::from_bits(exp as u64).is_nan() && f64::from_bits(got as u64).is_nan()),
        _ => exp == got,
    }
}

fn halves(exp: u128, got: u128, nan: fn(u16) -> bool) -> bool {
    (0..2).all(|k| {
        let e = (exp >> (16 * k)) as u16;
        let g = (got >> (16 * k)) as u16;
        e == g || (nan(e) && nan(g))
    })
}

fn is_nan_f16(v: u16) -> bool {
    v & 0x7c00 == 0x7c00 && v & 0x3ff != 0
}

fn is_nan_bf16(v: u16) -> bool {
    v & 0x7f80 == 0x7f80 && v & 0x7f != 0
}

fn f16_to_f64(v: u16) -> f64 {
    let s = if v & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((v >> 10) & 0x1f) as i32;
    let m = (v & 0x3ff) as f64;
    match e {
        0 => s * m * 2f64.powi(-24),
        31 => {
            if m == 0.0 {
                s * f64::INFINITY
            } else {
                f64::NAN
            }
        }
        _ => s * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

/// `lo <= got <= hi` numerically (-0 == +0); an expected NaN is marked by
/// NaN bounds and then any NaN passes.
fn within(ty: &str, got: u128, bounds: Option<(u128, u128)>) -> bool {
    let Some((lo, hi)) = bounds else { return false };
    let value = |bits: u128, half: Option<u32>| -> f64 {
        match (ty, half) {
            ("f32", _) => f32::from_bits(bits as u32) as f64,
            ("f64", _) => f64::from_bits(bits as u64),
            ("f16", _) => f16_to_f64(bits as u16),
            ("f16x2", Some(k)) => f16_to_f64((bits >> (16 * k)) as u16),
            _ => f64::NAN,
        }
    };
    let check = |half: Option<u32>| {
        let (l, h, g) = (value(lo, half), value(hi, half), value(got, half));
        if l.is_nan() || h.is_nan() {
            return g.is_nan();
        }
        !g.is_nan() && l <= g && g <= h
    };
    if ty == "f16x2" {
        check(Some(0)) && check(Some(1))
    } else {
        check(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_is_little_endian_per_element() {
        assert!(decode("00000001ff", 4).is_err());
        assert_eq!(decode("000000010203", 2).unwrap(), vec![0, 0, 1, 0, 3, 2]);
    }

    #[test]
    fn float_comparison_accepts_any_nan_only_for_nan() {
        assert!(float_eq("f32", 0x7fff_ffff, 0x7fc0_0000));
        assert!(!float_eq("f32", 0x3f80_0000, 0x7fc0_0000));
        assert!(float_eq("f16x2", 0x7fff_3c00, 0x7e00_3c00));
        assert!(!float_eq("f16x2", 0x7fff_3c00, 0x7e00_3c01));
    }

    #[test]
    fn tolerance_bounds() {
        let lo = 1.0f32.to_bits() as u128;
        let hi = 1.0000002f32.to_bits() as u128;
        assert!(within("f32", 1.0000001f32.to_bits() as u128, Some((lo, hi))));
        assert!(!within("f32", 1.0000004f32.to_bits() as u128, Some((lo, hi))));
        assert!(within("f32", 0x8000_0000, Some((0, 0))));
    }

    #[test]
    fn every_case_prepares_a_launch() {
        let o = load().expect("oracle loads");
        assert_eq!(o.cases.len(), 847);
        for c in &o.cases {
            let l = c.launch().unwrap_or_else(|e| panic!("{}: {e}", c.kernel));
            assert_eq!(l.outputs.len(), c.expected_hex.len(), "{}", c.kernel);
        }
    }
}
