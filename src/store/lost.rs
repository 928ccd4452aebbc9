//! Which read errors mean the bytes are lost on the medium (the recovery data may rebuild
//! them) and which mean the medium could not be asked (the run's I/O error, exit 4).
//!
//! **A list of "lost" errors, not of "unreachable" ones**: a store that goes away mid-read
//! (a SeaweedFS killed during `t` of an archive with recovery data, h76, session 32) had been
//! read as lost bytes, every later frame reported damaged "beyond the recovery data" (exit 5)
//! while the object was intact. The errno values below are what Linux block devices and file
//! systems return for bytes they cannot give back: `EIO` (a bad sector, most file systems),
//! `EBADE` (ZFS's checksum error, `ECKSUM`), `EUCLEAN` and `EBADMSG` (checksum or metadata
//! damage on btrfs, ext4 and others), `ENODATA` and `EILSEQ` (drivers and file systems that
//! report unreadable data so), `ENXIO` and `EREMOTEIO` (a device that answers no more for
//! that range); and a read cut short (`UnexpectedEof`: a truncated file or object). A
//! refused connection, a time-out, refused credentials or an object replaced mid-read is an
//! I/O error, as it is without recovery data.

use std::io;

/// The errno values read as lost bytes (module doc).
#[cfg(target_os = "linux")]
const LOST: [i32; 8] = [
    libc::EIO,
    libc::EBADE,
    libc::EUCLEAN,
    libc::EBADMSG,
    libc::ENODATA,
    libc::EILSEQ,
    libc::ENXIO,
    libc::EREMOTEIO,
];
#[cfg(not(target_os = "linux"))]
const LOST: [i32; 5] = [
    libc::EIO,
    libc::EBADMSG,
    libc::ENODATA,
    libc::EILSEQ,
    libc::ENXIO,
];

/// Whether `e` means the bytes are lost on the medium (module doc).
pub(crate) fn bytes_lost(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::UnexpectedEof || e.raw_os_error().is_some_and(|n| LOST.contains(&n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damage_errors_are_lost_bytes_and_an_unreachable_store_is_not() {
        for n in LOST {
            assert!(bytes_lost(&io::Error::from_raw_os_error(n)), "errno {n}");
        }
        assert!(bytes_lost(&io::ErrorKind::UnexpectedEof.into()));
        for kind in [
            io::ErrorKind::ConnectionRefused,
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::ConnectionAborted,
            io::ErrorKind::TimedOut,
            io::ErrorKind::PermissionDenied,
            io::ErrorKind::NotFound,
            io::ErrorKind::Other,
        ] {
            assert!(!bytes_lost(&kind.into()), "{kind:?}");
        }
        for n in [libc::ECONNREFUSED, libc::EACCES, libc::ENOENT, libc::EINVAL] {
            assert!(!bytes_lost(&io::Error::from_raw_os_error(n)), "errno {n}");
        }
    }
}
