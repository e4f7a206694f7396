//! `AlignedBuf`: heap memory aligned for O_DIRECT, convertible into `Bytes` without a copy.

use bytes::Bytes;
use std::alloc::{self, Layout};
use std::fmt;
use std::ptr::NonNull;

/// The alignment O_DIRECT needs for buffer address, file offset and length. 4096 covers both
/// 512-byte and 4 KiB logical block sizes.
pub const DIRECT_ALIGN_BYTES: usize = 4096;

/// A zero-initialised heap buffer whose address is a multiple of [`DIRECT_ALIGN_BYTES`].
///
/// The fabric's bulk buffer pool and the benchmark allocate these so that an object write can go
/// to the disk with O_DIRECT straight from the buffer the bytes were pulled into. Turn one into
/// `Bytes` with [`AlignedBuf::into_bytes`]; the `Bytes` keeps the alignment.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
}

// SAFETY: AlignedBuf uniquely owns its allocation, like a Box<[u8]>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zeroed bytes (at least one alignment unit is reserved so that an empty
    /// buffer is still a valid allocation).
    pub fn zeroed(len: usize) -> AlignedBuf {
        let capacity = len
            .max(DIRECT_ALIGN_BYTES)
            .next_multiple_of(DIRECT_ALIGN_BYTES);
        let layout = match Layout::from_size_align(capacity, DIRECT_ALIGN_BYTES) {
            Ok(layout) => layout,
            // Only reachable for sizes near isize::MAX, which no caller can hold in memory.
            Err(_) => panic!("aligned buffer of {len} bytes cannot be laid out"),
        };
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        AlignedBuf { ptr, len, layout }
    }

    /// Copies `data` into a new aligned buffer.
    pub fn copy_from(data: &[u8]) -> AlignedBuf {
        let mut buf = AlignedBuf::zeroed(data.len());
        buf.as_mut_slice().copy_from_slice(data);
        buf
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Shortens the visible length (the allocation stays).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for `layout.size() >= len` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Raw pointer for an I/O submission that writes into the buffer.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Hands the buffer to `Bytes` without copying; the address stays aligned.
    pub fn into_bytes(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with exactly this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .finish()
    }
}

/// True when an O_DIRECT transfer of `len` bytes at `offset` from/to `addr` is allowed.
pub fn is_direct_aligned(offset: u64, len: usize, addr: usize) -> bool {
    let align = DIRECT_ALIGN_BYTES as u64;
    len > 0
        && offset.is_multiple_of(align)
        && (len as u64).is_multiple_of(align)
        && addr.is_multiple_of(DIRECT_ALIGN_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_survive_conversion_to_bytes() {
        for len in [0, 1, 4095, 4096, 1 << 20] {
            let mut buf = AlignedBuf::zeroed(len);
            assert_eq!(buf.len(), len);
            assert_eq!(buf.as_slice().as_ptr() as usize % DIRECT_ALIGN_BYTES, 0);
            if len > 0 {
                buf.as_mut_slice()[len - 1] = 7;
            }
            let bytes = buf.into_bytes();
            assert_eq!(bytes.len(), len);
            assert_eq!(bytes.as_ptr() as usize % DIRECT_ALIGN_BYTES, 0);
            if len > 0 {
                assert_eq!(bytes[len - 1], 7);
            }
        }
    }

    #[test]
    fn alignment_check_covers_offset_length_and_address() {
        assert!(is_direct_aligned(0, 4096, 8192));
        assert!(!is_direct_aligned(512, 4096, 8192));
        assert!(!is_direct_aligned(0, 4000, 8192));
        assert!(!is_direct_aligned(0, 4096, 8193));
        assert!(!is_direct_aligned(0, 0, 0));
    }
}
