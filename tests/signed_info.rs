//! What `info` says of a signature it verified without a key (helper-52): it checks the
//! signature over the header, the frame tags and the footer, never a frame's bytes against its
//! tag (that needs every frame read and, encrypted, the key). It said "verified over the
//! header, every frame tag, the index and the footer" also of an archive whose index frame
//! had been changed, which `t --signer` refuses.

mod cli_common;
mod common;

use cli_common::*;
use common::code;

#[test]
fn info_does_not_claim_the_index_bytes_it_did_not_check() {
    let fx = Fx::new();
    fx.file("t/a", b"the real backup\n");
    fx.ok(&["keygen", "-q", "--sign", "-o", "me"]);
    fx.ok(&["keygen", "-q", "-o", "k"]);
    for (name, keys) in [("e.kry", &["--keyfile", "k"][..]), ("u.kry", &[][..])] {
        fx.ok(&[&["c", "-q", "--sign", "me"][..], keys, &[name, "t"]].concat());
        let mut b = fx.read(name);
        // The footer's first field is the index frame's offset; change a byte of its body.
        let footer = b.len() - 64;
        let index = u64::from_le_bytes(b[footer..footer + 8].try_into().unwrap()) as usize;
        b[index + 16 + 3] ^= 0x10;
        fx.file(name, &b);
        let info = out(&fx.ok(&["info", name]));
        assert!(
            info.contains(
                "(ML-DSA-65 + Ed25519 signature verified over the header, every frame's tag and the footer;\n"
            ),
            "{name}: {info}"
        );
        assert!(
            info.contains("krypta t --signer checks each frame's bytes against its tag)"),
            "{info}"
        );
        assert!(!info.contains("the index"), "{name}: {info}");
        let o = fx.run(&[&["t", "--signer", "me.pub"][..], keys, &[name]].concat());
        assert_eq!(code(&o), 8, "{name}: {}", err(&o));
    }
}
