//! Stack files: what TOML says ([`mod@file`]), what it means once checked ([`mod@stack`]: the
//! typed values and what they answer), how one becomes the other (`read`, with the check that
//! every node can reach the nodes it talks to, `reach`) and back (`write`), and how a program
//! makes one as a value rather than as text (`build`: a setter per field).

mod build;
pub mod file;
pub(crate) mod reach;
mod read;
pub mod stack;
mod write;

pub use file::{RoleName, StackFile};
pub use stack::{
    Address, ClientSpec, DefaultLayout, FYOD_MEMORY_MAX_BYTES, FyodMode, FyodServiceNode, FyodSpec,
    HostRef, IDLE_NODE_MEMORY_MAX_BYTES, NODES_MAX, Network, NetworkLink, NodeInterface, NodeSpec,
    OssSpec, OstDisk, ROUTER_BUFFERS_MAX, Role, RouteRule, Stack, Subnet, TIME_SCALE_MAX,
};
