//! [`Secret`]: what a node's admin service asks of a caller before it changes anything.
//!
//! Every stack has one secret, 32 random bytes written as 64 hex digits in a file only its
//! owner may read (mode 0600): `iopath up` writes it into the stack's storage directory,
//! `iopath launch` beside the stack file it writes. Its nodes check `set_param` (fail points
//! included: they are parameters) and `Shutdown` against it; reads stay open. Callers send it
//! in the gRPC metadata as `authorization: iopath-secret <hex>`. It travels in plain text over
//! TCP, so it keeps out the machine's other users and a tool pointed at the wrong stack, not
//! someone who can read the network.

use std::fmt;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::error::AdminError;

/// The secret's length in bytes.
pub const SECRET_LEN_BYTES: usize = 32;

/// The gRPC metadata key the secret travels under.
pub const METADATA_KEY: &str = "authorization";

/// The word before the secret's hex digits in the metadata value.
pub const SCHEME: &str = "iopath-secret";

/// The environment variable client tools read a secret file's path from, when
/// `--secret-file` is not given.
pub const SECRET_FILE_ENV: &str = "IOPATH_ADMIN_SECRET_FILE";

/// The file name of a stack's secret in its storage directory (`iopath up`), or of a node's
/// own secret in its directory (a node started without one).
pub const SECRET_FILE_NAME: &str = "admin.secret";

/// Permission bits a secret file may not have: any access by its group or by others.
const SHARED_MODE_BITS: u32 = 0o077;

/// A stack's admin secret. Its `Debug` never shows the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    /// The random bytes.
    bytes: [u8; SECRET_LEN_BYTES],
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// A new secret from the operating system's random source.
    pub fn generate() -> Result<Secret, AdminError> {
        let mut bytes = [0u8; SECRET_LEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| AdminError::Random {
            detail: e.to_string(),
        })?;
        Ok(Secret { bytes })
    }

    /// A new secret, written to a new file at `path` that only its owner may read or write
    /// (mode 0600). A file already there — a previous run's secret — is replaced; the new
    /// file is created afresh (`O_EXCL`), never opened through a link someone left there.
    pub fn create(path: &Path) -> Result<Secret, AdminError> {
        let secret = Secret::generate()?;
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(file_error("replace", path, source)),
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|source| file_error("create", path, source))?;
        writeln!(file, "{}", secret.to_hex())
            .and_then(|()| file.sync_all())
            .map_err(|source| file_error("write", path, source))?;
        Ok(secret)
    }

    /// The secret in the file at `path`, refused if its group or others may read or write it.
    pub fn load(path: &Path) -> Result<Secret, AdminError> {
        let metadata =
            std::fs::metadata(path).map_err(|source| file_error("read", path, source))?;
        let mode = metadata.permissions().mode() & 0o7777;
        if mode & SHARED_MODE_BITS != 0 {
            return Err(AdminError::SecretFileShared {
                path: path.to_owned(),
                mode,
            });
        }
        // A secret is one line; anything much longer is not a secret file.
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut std::io::Read::take(
                std::fs::File::open(path).map_err(|source| file_error("read", path, source))?,
                SECRET_FILE_MAX_BYTES,
            ),
            &mut text,
        )
        .map_err(|source| file_error("read", path, source))?;
        Secret::from_hex(text.trim(), &path.display().to_string())
    }

    /// The secret written as `text`: 64 hex digits. `origin` says where the text came from,
    /// for the error.
    pub fn from_hex(text: &str, origin: &str) -> Result<Secret, AdminError> {
        let bad = |why: String| AdminError::BadSecret {
            origin: origin.to_owned(),
            why,
        };
        if text.len() != 2 * SECRET_LEN_BYTES {
            return Err(bad(format!(
                "{} characters where a secret is {} hex digits",
                text.len(),
                2 * SECRET_LEN_BYTES
            )));
        }
        let mut bytes = [0u8; SECRET_LEN_BYTES];
        for (byte, pair) in bytes.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
            let digit = |c: u8| {
                char::from(c)
                    .to_digit(16)
                    .ok_or_else(|| bad(format!("{:?} is not a hex digit", char::from(c))))
            };
            // Two hex digits fit a byte: 15 * 16 + 15 = 255.
            *byte = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
        }
        Ok(Secret { bytes })
    }

    /// The secret as 64 lowercase hex digits, as its file holds it.
    pub fn to_hex(&self) -> String {
        self.bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The metadata value a caller sends: `iopath-secret <hex>`.
    pub fn header_value(&self) -> String {
        format!("{SCHEME} {}", self.to_hex())
    }

    /// Whether `other` is this secret, compared in time that does not depend on where they
    /// differ, so a caller cannot find the secret a byte at a time by timing refusals.
    pub fn matches(&self, other: &Secret) -> bool {
        let difference = self
            .bytes
            .iter()
            .zip(&other.bytes)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        // black_box: the compiler may not turn the fold into an early exit.
        std::hint::black_box(difference) == 0
    }
}

/// The most of a file read when loading a secret (64 digits and a newline, with room to spare).
const SECRET_FILE_MAX_BYTES: u64 = 256;

/// The secret file beside stack file `stack_file`: `<stack file>.secret` (`iopath launch`
/// writes it there, and `iopath lctl --stack FILE` looks for it there).
pub fn path_beside(stack_file: &Path) -> PathBuf {
    let mut name = stack_file.as_os_str().to_owned();
    name.push(".secret");
    PathBuf::from(name)
}

/// The secret a node process checks admin calls against: its stack's, from `file`, if given;
/// else a new one of its own, written to [`SECRET_FILE_NAME`] in `dir` (mode 0600), whose path
/// is returned for the node to announce. Either way the node is never open to everyone.
pub fn for_node(file: Option<&Path>, dir: &Path) -> Result<(Secret, Option<PathBuf>), AdminError> {
    match file {
        Some(file) => Ok((Secret::load(file)?, None)),
        None => {
            let own = dir.join(SECRET_FILE_NAME);
            Ok((Secret::create(&own)?, Some(own)))
        }
    }
}

/// The error for `action` on the secret file at `path`.
fn file_error(action: &'static str, path: &Path, source: std::io::Error) -> AdminError {
    AdminError::SecretFile {
        action,
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_secret_file_is_private_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SECRET_FILE_NAME);
        let created = Secret::create(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o600, "mode {mode:o}");
        let loaded = Secret::load(&path).unwrap();
        assert!(loaded.matches(&created));
        // A second run replaces the first run's secret.
        let again = Secret::create(&path).unwrap();
        assert!(!again.matches(&created));
        assert!(Secret::load(&path).unwrap().matches(&again));
    }

    #[test]
    fn a_secret_file_others_may_read_is_refused_with_its_path_and_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SECRET_FILE_NAME);
        Secret::create(&path).unwrap();
        for mode in [0o640, 0o604, 0o660, 0o602] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = Secret::load(&path).unwrap_err();
            assert!(
                matches!(err, AdminError::SecretFileShared { mode: m, .. } if m == mode),
                "{err:?}"
            );
            let text = err.to_string();
            assert!(
                text.contains(&path.display().to_string())
                    && text.contains(&format!("{mode:04o}"))
                    && text.contains("chmod 600"),
                "{text}"
            );
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        Secret::load(&path).unwrap();
    }

    #[test]
    fn a_missing_file_or_bad_text_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent.secret");
        let text = Secret::load(&path).unwrap_err().to_string();
        assert!(
            text.contains("read the admin secret file") && text.contains("absent.secret"),
            "{text}"
        );
        for bad in ["", "abc", &"g".repeat(64), &"0".repeat(66)] {
            let err = Secret::from_hex(bad, "the test").unwrap_err();
            assert!(
                matches!(err, AdminError::BadSecret { .. }),
                "{bad:?}: {err:?}"
            );
            assert!(
                err.to_string().starts_with("the test does not hold"),
                "{err}"
            );
        }
    }

    #[test]
    fn hex_round_trips_and_only_the_same_secret_matches() {
        let secret = Secret::generate().unwrap();
        let hex = secret.to_hex();
        assert_eq!(hex.len(), 64);
        let back = Secret::from_hex(&hex.to_uppercase(), "upper").unwrap();
        assert!(back.matches(&secret));
        let other = Secret::generate().unwrap();
        assert!(!other.matches(&secret));
        // One bit different, in the last byte.
        let mut last = hex.clone().into_bytes();
        last[63] = if last[63] == b'0' { b'1' } else { b'0' };
        let near = Secret::from_hex(std::str::from_utf8(&last).unwrap(), "near").unwrap();
        assert!(!near.matches(&secret));
        assert_eq!(format!("{secret:?}"), "Secret(..)");
        assert_eq!(secret.header_value(), format!("iopath-secret {hex}"));
    }

    #[test]
    fn a_node_uses_its_stacks_secret_or_writes_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let stacks = dir.path().join("stack.secret");
        let stack_secret = Secret::create(&stacks).unwrap();
        let (secret, own) = for_node(Some(&stacks), dir.path()).unwrap();
        assert!(secret.matches(&stack_secret));
        assert_eq!(own, None);
        assert!(!dir.path().join(SECRET_FILE_NAME).exists());
        let (secret, own) = for_node(None, dir.path()).unwrap();
        let own = own.unwrap();
        assert_eq!(own, dir.path().join(SECRET_FILE_NAME));
        assert!(Secret::load(&own).unwrap().matches(&secret));
        assert!(!secret.matches(&stack_secret));
    }

    #[test]
    fn a_secret_file_sits_beside_its_stack_file() {
        assert_eq!(
            path_beside(Path::new("run/spider.launched.toml")),
            Path::new("run/spider.launched.toml.secret")
        );
    }
}
