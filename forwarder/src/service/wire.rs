//! What goes on the wire to a fyod: its portal and its opcodes, shared by the service, its
//! token manager (fyods ask each other for MUNIX tokens) and the client; defined with the
//! messages, in `iopath_proto::fyod`.

pub use iopath_proto::fyod::{PORTAL as FYOD_PORTAL, opcode};
