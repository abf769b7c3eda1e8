//! Mutated PTX through the whole compiler: parse errors and compile errors
//! are fine, a crash or invalid IR handed to LLVM is not. Deterministic
//! (seeded) and bounded so it runs in every test pass.

use std::path::PathBuf;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Each kernel of the oracle as a standalone module.
fn seeds() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/ptx-oracle");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir).expect("oracle").map(|e| e.expect("entry").path()).collect();
    files.sort();
    for f in files.iter().filter(|p| p.extension().is_some_and(|e| e == "ptx")) {
        let text = std::fs::read_to_string(f).expect("read");
        let header: String = text.lines().take_while(|l| !l.contains(".entry") && !l.contains(".func")).collect::<Vec<_>>().join("\n");
        for chunk in text.split(".visible .entry").skip(1) {
            out.push(format!("{header}\n.visible .entry{chunk}"));
        }
    }
    out
}

fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        if c.is_alphanumeric() || c == '_' || c == '%' || c == '$' || c == '.' {
            cur.push(c);
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            out.push(c.to_string());
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn mutate(rng: &mut Rng, src: &str, pool: &[String]) -> String {
    let mut t = tokens(src);
    for _ in 0..1 + rng.below(4) {
        if t.is_empty() {
            break;
        }
        let i = rng.below(t.len());
        match rng.below(5) {
            0 => t[i] = pool[rng.below(pool.len())].clone(),
            1 => {
                t.remove(i);
            }
            2 => {
                let x = t[i].clone();
                t.insert(i, x);
            }
            3 => {
                // Swap a modifier for another one.
                if let Some(dot) = t[i].rfind('.') {
                    let m = pool.iter().filter(|p| p.starts_with('.')).nth(rng.below(64)).cloned().unwrap_or_default();
                    let head = t[i][..dot].to_string();
                    t[i] = format!("{head}{m}");
                }
            }
            _ => {
                let j = rng.below(t.len());
                t.swap(i, j);
            }
        }
    }
    t.concat()
}

#[test]
fn mutated_ptx_never_crashes_the_compiler() {
    let seeds = seeds();
    assert!(seeds.len() > 800);
    let pool: Vec<String> = seeds.iter().take(60).flat_map(|s| tokens(s)).filter(|t| t.trim().len() > 1).collect();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut parsed, mut compiled, mut llvm_errors) = (0, 0, Vec::new());
    let iterations = 1500;
    for _ in 0..iterations {
        let seed = &seeds[rng.below(seeds.len())];
        let src = mutate(&mut rng, seed, &pool);
        let Ok(module) = ptx::parse(&src) else { continue };
        parsed += 1;
        match compiler::compile(&module, &src, &compiler::Target::HostCpu) {
            Ok(_) => compiled += 1,
            Err(compiler::CompileError::Llvm(e)) => llvm_errors.push(format!("{e}\n--- source ---\n{src}")),
            Err(_) => {}
        }
    }
    eprintln!("fuzz: {iterations} mutants, {parsed} parsed, {compiled} compiled");
    assert!(parsed > iterations / 10, "the mutator should keep a fair share valid");
    assert!(llvm_errors.is_empty(), "lowering produced IR LLVM rejects:\n{}", llvm_errors.join("\n====\n"));
}
