//! The presets: stack files shipped inside the binary (`stack/presets/*.toml`), the papers'
//! systems in miniature.

use crate::error::StackError;
use crate::schema::{Stack, StackFile};

/// A preset: its name and its stack file's text.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// The name `--preset` takes.
    pub name: &'static str,
    /// The stack file.
    pub text: &'static str,
}

/// Every preset, the default first.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "asci-red-mini",
        text: include_str!("../presets/asci-red-mini.toml"),
    },
    Preset {
        name: "spider-mini",
        text: include_str!("../presets/spider-mini.toml"),
    },
    Preset {
        name: "spider-mini-routed",
        text: include_str!("../presets/spider-mini-routed.toml"),
    },
    Preset {
        name: "spider-cluster",
        text: include_str!("../presets/spider-cluster.toml"),
    },
];

/// The preset `iopath up`, `iopath demo` and `iopath bench ior` use when given none.
pub const DEFAULT_PRESET: &str = "asci-red-mini";

/// The routed preset: what the commands about routers (`bench iorcd`, `bench monitoring`,
/// `trace`) run on unless told otherwise — LNET routers between the compute and the storage
/// networks.
pub const ROUTED_PRESET: &str = "spider-mini-routed";

/// The cluster preset: Spider across five hosts (`iopath launch`, docs/cluster.md).
pub const CLUSTER_PRESET: &str = "spider-cluster";

/// The preset called `name`.
pub fn preset(name: &str) -> Result<&'static Preset, StackError> {
    PRESETS
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| StackError::UnknownPreset {
            name: name.to_owned(),
            known: PRESETS
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

impl Preset {
    /// Its stack file, parsed.
    pub fn file(&self) -> Result<StackFile, StackError> {
        StackFile::parse(self.text, &self.origin())
    }

    /// Its stack, checked.
    pub fn stack(&self) -> Result<Stack, StackError> {
        Stack::parse(self.text, &self.origin())
    }

    /// How messages name it.
    pub fn origin(&self) -> String {
        format!("preset {}", self.name)
    }
}
