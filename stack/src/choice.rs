//! Where a stack comes from: a preset by name or a stack file, and the route set in force —
//! what `--preset`, `--stack` and `--route-set` say on every command that runs a stack.

use std::path::PathBuf;

use crate::error::StackError;
use crate::presets::{self, DEFAULT_PRESET};
use crate::schema::{Stack, StackFile};

/// A preset or a stack file (a file wins if both are given), and the route set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackChoice {
    /// A preset: asci-red-mini (the default), spider-mini, spider-mini-routed.
    pub preset: Option<String>,
    /// A stack file (TOML).
    pub stack: Option<PathBuf>,
    /// The route set in force, for stacks that have several (spider-mini-routed:
    /// round-robin, fine-grained).
    pub route_set: Option<String>,
}

impl StackChoice {
    /// The stack `iopath launch` wrote to `attach`, if given (`--attach FILE`); else the
    /// chosen one.
    pub fn load_or_attached(&self, attach: Option<&std::path::Path>) -> Result<Stack, StackError> {
        match attach {
            Some(file) => Stack::load(file),
            None => self.load(),
        }
    }

    /// Reads and checks the chosen stack.
    pub fn load(&self) -> Result<Stack, StackError> {
        let (mut file, origin) = match (&self.preset, &self.stack) {
            (_, Some(path)) => {
                let text = crate::schema::file::read_text(path, "read the stack file")?;
                let origin = path.display().to_string();
                (StackFile::parse(&text, &origin)?, origin)
            }
            (preset, None) => {
                let p = presets::preset(preset.as_deref().unwrap_or(DEFAULT_PRESET))?;
                (p.file()?, p.origin())
            }
        };
        if let Some(set) = &self.route_set {
            file.route_set = Some(set.clone());
        }
        Stack::from_file(&file, &origin)
    }
}
