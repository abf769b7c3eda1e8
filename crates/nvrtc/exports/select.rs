// Included by the build scripts of libnvrtc and libnvrtc12: the lines of
// an export list for one library version. A line `[V] NAME` is kept only
// for version V; the others are kept as they are. Returns the path of the
// list written (in OUT_DIR), for `generate_with`.
pub fn select(list: &str, version: &str) -> String {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let src = std::path::Path::new(&manifest).join(list);
    println!("cargo:rerun-if-changed={}", src.display());
    let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim();
        match t.strip_prefix('[').and_then(|r| r.split_once(']')) {
            Some((v, name)) if v == version => {
                out.push_str(name.trim());
                out.push('\n');
            }
            Some(_) => {}
            None => {
                out.push_str(t);
                out.push('\n');
            }
        }
    }
    let dir = std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into());
    let path = std::path::Path::new(&dir).join(format!("nvrtc{version}.txt"));
    std::fs::write(&path, out).expect("write the selected export list");
    path.display().to_string()
}
