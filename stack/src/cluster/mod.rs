//! A stack on a cluster: [`Hosts`] (a hostfile, or the Slurm job's nodes, with what each says
//! of its [`interfaces`]), [`mod@place`] (each
//! node on a host, each numbered address a socket there), and [`Launched`] (the server nodes
//! started on their hosts by `srun` or a command template, and stopped again).

pub mod hosts;
pub mod interfaces;
pub mod launch;
pub mod place;

pub use hosts::{Host, Hosts};
pub use launch::{LaunchConfig, Launched, NodeCommand, Starter};
pub use place::{PORT_BASE_DEFAULT, place};
