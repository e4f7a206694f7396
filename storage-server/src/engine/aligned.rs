//! Aligned buffers live in the fabric, the lowest layer that fills them: transports receive
//! bulk payloads into them and the engines write them with O_DIRECT.

pub use iopath_fabric::aligned::{
    AlignedBuf, BufferPool, DIRECT_ALIGN_BYTES, PooledBuf, SizedPools, is_direct_aligned,
};
