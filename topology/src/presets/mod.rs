//! The papers' machines at full scale.
//!
//! Each preset writes down every number it uses. Numbers the papers give are cited by
//! section; numbers they do not give are marked **assumed** or **derived** with the reasoning,
//! so a reader can tell the model's inputs from its findings.

pub mod jaguar;
pub mod titan;

pub use jaguar::JaguarSpider;
pub use titan::TitanSpider2;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::TopologyError;

/// The presets by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PresetName {
    /// Jaguar XT5 (SeaStar2+ torus) with Spider, direct-attached and routed (Spider paper).
    JaguarSpider,
    /// Titan XK7 (Gemini torus) with Spider II and fine-grained routing (Titan paper).
    TitanSpider2,
}

impl PresetName {
    /// The name used on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            PresetName::JaguarSpider => "jaguar-spider",
            PresetName::TitanSpider2 => "titan-spider2",
        }
    }
}

impl fmt::Display for PresetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PresetName {
    type Err = TopologyError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "jaguar-spider" | "jaguar" => Ok(PresetName::JaguarSpider),
            "titan-spider2" | "titan" => Ok(PresetName::TitanSpider2),
            _ => Err(TopologyError::UnknownPreset {
                name: name.to_string(),
            }),
        }
    }
}
