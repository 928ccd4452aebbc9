fn main() {
    let data = std::fs::read("/tmp/m/driver.so").unwrap();
    let mut buf: Vec<u8> = data[..64 << 20].to_vec();
    krypta::codec::bcj::encode(krypta::codec::Filter::X86, &mut buf, 0);
    for round in 0..3 {
        let mut b = buf.clone();
        let t = std::time::Instant::now();
        for chunk in b.chunks_mut(4 << 20) {
            krypta::codec::bcj::decode(krypta::codec::Filter::X86, chunk, 0);
        }
        let dt = t.elapsed().as_secs_f64();
        println!("round {round}: decode {:.0} MB/s", 64.0 * 1.048576 / dt);
        let t = std::time::Instant::now();
        for chunk in b.chunks_mut(4 << 20) {
            krypta::codec::bcj::encode(krypta::codec::Filter::X86, chunk, 0);
        }
        let dt = t.elapsed().as_secs_f64();
        println!("round {round}: encode {:.0} MB/s", 64.0 * 1.048576 / dt);
    }
}
