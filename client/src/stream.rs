//! [`BufferedStream`]: stdio on a [`File`] — writes gathered in a stream buffer and sent as
//! one write when it is full, reads served from a buffer refilled one buffer at a time, and a
//! settable buffer size (`setvbuf`).
//!
//! It follows the Cougar stdio the paper describes (§2.5.2): the default buffer is 8 KiB; a
//! full buffer goes out as one `cwrite` (so a buffer sized to a multiple of the stripe width
//! turns small writes into stripe-sized ones); a write at least as large as the buffer
//! bypasses it — the buffer is flushed, then the data is sent as it is, without a copy when
//! handed over as [`Bytes`]; reads never bypass: the data is always copied out of the
//! buffer.
//!
//! The stream's position is the file pointer, plus what waits in the write buffer, minus what
//! is left unread in the read buffer. Switching from reading to writing moves the file
//! pointer back over the unread bytes; switching from writing to reading flushes first.
//! Dropping a stream with buffered writes loses them, as `_exit` does: call
//! [`BufferedStream::close`] (or `flush`).

use bytes::{Buf as _, Bytes, BytesMut};

use crate::config::STREAM_BUFFER_MAX_BYTES;
use crate::error::ClientError;
use crate::file::File;

/// A buffered stream over a file (see the module documentation).
#[derive(Debug)]
pub struct BufferedStream {
    file: File,
    buffer_size_bytes: usize,
    /// Bytes written and not yet sent.
    pending: BytesMut,
    /// Bytes read ahead and not yet handed out.
    unread: Bytes,
    writes_issued: u64,
    reads_issued: u64,
}

impl BufferedStream {
    /// A stream over `file` at its current file pointer; `buffer_size_bytes` 0 is
    /// unbuffered. (Made by [`crate::Client::stream`], which checks the size.)
    pub(crate) fn new(file: File, buffer_size_bytes: usize) -> BufferedStream {
        BufferedStream {
            file,
            buffer_size_bytes,
            pending: BytesMut::new(),
            unread: Bytes::new(),
            writes_issued: 0,
            reads_issued: 0,
        }
    }

    /// The file underneath.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The buffer size.
    pub fn buffer_size_bytes(&self) -> usize {
        self.buffer_size_bytes
    }

    /// Writes sent to the file so far (each one `cwrite`).
    pub fn writes_issued(&self) -> u64 {
        self.writes_issued
    }

    /// Reads sent to the file so far (each one `cread`).
    pub fn reads_issued(&self) -> u64 {
        self.reads_issued
    }

    /// The stream's position in the file.
    pub fn position(&self) -> u64 {
        self.file.position() + self.pending.len() as u64 - self.unread.len() as u64
    }

    /// `setvbuf`: flushes what is buffered, then uses buffers of `buffer_size_bytes` (0:
    /// unbuffered).
    pub async fn setvbuf(&mut self, buffer_size_bytes: usize) -> Result<(), ClientError> {
        if buffer_size_bytes > STREAM_BUFFER_MAX_BYTES {
            return Err(ClientError::TooLarge {
                what: "stream buffer",
                bytes: buffer_size_bytes as u64,
                max_bytes: STREAM_BUFFER_MAX_BYTES as u64,
            });
        }
        self.flush().await?;
        self.drop_read_ahead();
        self.buffer_size_bytes = buffer_size_bytes;
        Ok(())
    }

    /// `fwrite`: buffers `data`, sending each buffer as it fills. Returns `data.len()`.
    pub async fn write(&mut self, data: &[u8]) -> Result<usize, ClientError> {
        self.drop_read_ahead();
        if data.len() >= self.buffer_size_bytes.max(1) {
            // Bypass: larger than the buffer; what is buffered goes first, in order.
            self.flush().await?;
            self.send(Bytes::copy_from_slice(data)).await?;
            return Ok(data.len());
        }
        let mut rest = data;
        // Bounded: each pass takes at least one byte (the buffer has room after a flush).
        while !rest.is_empty() {
            let room = self.buffer_size_bytes - self.pending.len();
            let take = room.min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() == self.buffer_size_bytes {
                self.flush().await?;
            }
        }
        Ok(data.len())
    }

    /// [`BufferedStream::write`] for data already in [`Bytes`]: a write at least as large as
    /// the buffer is sent without a copy.
    pub async fn write_bytes(&mut self, data: Bytes) -> Result<usize, ClientError> {
        if data.len() >= self.buffer_size_bytes.max(1) {
            self.drop_read_ahead();
            self.flush().await?;
            let length = data.len();
            self.send(data).await?;
            return Ok(length);
        }
        self.write(&data).await
    }

    /// Sends what is buffered as one write.
    pub async fn flush(&mut self) -> Result<(), ClientError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let data = self.pending.split().freeze();
        self.send(data).await
    }

    /// `fread`: fills `out` from the stream, refilling the buffer a whole buffer at a time;
    /// fewer bytes only at the end of the file. Returns how many.
    pub async fn read(&mut self, out: &mut [u8]) -> Result<usize, ClientError> {
        self.flush().await?;
        let mut filled = 0;
        // Bounded: each pass copies at least one byte or stops at the end of the file.
        while filled < out.len() {
            if self.unread.is_empty() {
                let want = if self.buffer_size_bytes == 0 {
                    out.len() - filled
                } else {
                    self.buffer_size_bytes
                };
                self.reads_issued += 1;
                self.unread = self.file.cread(want as u64).await?;
                if self.unread.is_empty() {
                    break;
                }
            }
            let take = self.unread.len().min(out.len() - filled);
            out[filled..filled + take].copy_from_slice(&self.unread[..take]);
            self.unread.advance(take);
            filled += take;
        }
        Ok(filled)
    }

    /// Moves the stream to `position` (flushing first).
    pub async fn seek(&mut self, position: u64) -> Result<(), ClientError> {
        self.flush().await?;
        self.unread = Bytes::new();
        self.file.seek(position);
        Ok(())
    }

    /// Flushes and lets go of the stream (the file stays open).
    pub async fn close(mut self) -> Result<File, ClientError> {
        self.flush().await?;
        self.drop_read_ahead();
        Ok(self.file)
    }

    async fn send(&mut self, data: Bytes) -> Result<(), ClientError> {
        self.writes_issued += 1;
        self.file.cwrite(data).await.map(drop)
    }

    /// Forgets what was read ahead and not handed out, moving the file pointer back to the
    /// stream's position.
    fn drop_read_ahead(&mut self) {
        if !self.unread.is_empty() {
            let back = self.unread.len() as u64;
            self.file.seek(self.file.position() - back);
            self.unread = Bytes::new();
        }
    }
}
