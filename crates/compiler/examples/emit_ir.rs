fn main() {
    let path = std::env::args().nth(1).unwrap();
    let src = std::fs::read_to_string(&path).unwrap();
    let m = ptx::parse(&src).unwrap();
    print!("{}", compiler::emit_ir(&m, &src).unwrap());
}
