//! Bare loopback TCP, measured in the same run as what it anchors: threads with blocking
//! sockets and nothing of iopath's in the way, sending straight to each other or through a
//! **relay** — a thread that reads what arrives and writes it on, as a router must at least
//! do (two kernel copies, no framing, no checksum, no credits).
//!
//! - [`round_trip_us`]: one small message there and back, one at a time: what the kernel and
//!   the scheduler alone cost a message, and so what a hop over one more connection costs at
//!   the least.
//! - [`streams`]: bytes streamed as fast as the sockets take them: the rate and the CPU a
//!   byte stream costs, direct or relayed. How busy the relay keeps the cores is what this
//!   machine allows a store-and-forward hop — in a VM, a thread that blocks on a socket leaves
//!   its core idle until the hypervisor wakes it again.
//!
//! Every connection is made before any thread starts, and every socket has a timeout, so a
//! failure anywhere ends every thread. Blocking: call these off the async runtime.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Barrier};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::cpu::{CpuSample, CpuUse};
use crate::error::BenchError;
use iopath_stack::soak::percentile;

/// The bytes each way of [`round_trip_us`]: about a small frame's header.
pub const ROUND_TRIP_BYTES: usize = 64;

/// Most relays a bare path crosses: each is a hop, and the selftest's routed layout has one.
pub const RELAYS_MAX: u32 = 4;

/// Most parallel streams [`streams`] runs (each a sender, a receiver, and two threads per relay).
pub const STREAMS_MAX: u32 = 64;

/// Largest write of [`streams`], and the most a relay or receiver reads at once: 1 MiB, the
/// fabric's bulk chunk, the most a router forwards as one message.
pub const CHUNK_MAX_BYTES: usize = 1 << 20;

/// Most round trips [`round_trip_us`] keeps for its median.
pub const TRIPS_MAX: usize = 60_000;

/// How much longer than the measurement a blocked socket call may take before it fails.
const STALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The buffer of a relay's return direction, which carries a round trip's echo or nothing.
const RETURN_BUFFER_BYTES: usize = 4096;

/// What [`streams`] measured.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BareStreams {
    /// Parallel streams, each from its own sender to its own receiver.
    pub streams: u32,
    /// Relays each stream crosses: 0 is direct.
    pub relays: u32,
    /// Bytes per write, and the most a relay reads at once.
    pub chunk_bytes: u64,
    /// Bytes the receivers got, together: every byte the senders sent, or it is an error.
    pub bytes: u64,
    /// Bytes every receiver got, over the time from the start until the last one had all.
    pub mib_s: f64,
    /// The whole machine's CPUs meanwhile.
    pub cpu: Option<CpuUse>,
    /// Busy core-seconds of the machine per GiB received.
    pub core_s_per_gib: Option<f64>,
}

/// The median round trip of [`ROUND_TRIP_BYTES`] through `relays` relays and back, Nagle off,
/// one message at a time for `seconds` (the median, because in a VM a few trips wait
/// milliseconds for a core and would sway a mean). With no relay it is the floor under any
/// message; each relay adds what a bare hop costs.
pub fn round_trip_us(relays: u32, seconds: f64) -> Result<f64, BenchError> {
    check_relays(relays)?;
    let mut path =
        Path::connect(relays, seconds).map_err(failed("bare TCP round trip: connect"))?;
    let relays = path.start_relays(ROUND_TRIP_BYTES);
    let mut echo = path.receiver;
    let echo = thread::spawn(move || -> io::Result<()> {
        let mut buf = [0u8; ROUND_TRIP_BYTES];
        // Until the other side closes: read_exact then fails with UnexpectedEof.
        while echo.read_exact(&mut buf).is_ok() {
            echo.write_all(&buf)?;
        }
        Ok(())
    });
    let mut stream = path.sender;
    let mut buf = [7u8; ROUND_TRIP_BYTES];
    let started = Instant::now();
    let mut times_us = Vec::new();
    // Bounded by time, and by the times kept.
    let trips = (|| -> io::Result<()> {
        while started.elapsed().as_secs_f64() < seconds && times_us.len() < TRIPS_MAX {
            let sent = Instant::now();
            stream.write_all(&buf)?;
            stream.read_exact(&mut buf)?;
            times_us.push(sent.elapsed().as_secs_f64() * 1e6);
        }
        Ok(())
    })();
    // Closing ends the relays and the echo, whatever happened.
    drop(stream);
    trips.map_err(failed("bare TCP round trip: a trip"))?;
    join_all(relays, "bare TCP round trip: relay")?;
    join(echo, "bare TCP round trip: echo")?;
    if times_us.is_empty() {
        return Err(BenchError::tool("bare TCP round trip: no trips"));
    }
    Ok(percentile(&times_us, 0.5))
}

/// Streams writes of `chunk_bytes` (at most [`CHUNK_MAX_BYTES`]) from `streams` senders,
/// each to its own receiver through `relays` relays of its own, for `seconds`, and measures
/// the rate and the machine's CPU.
pub fn streams(
    streams: u32,
    relays: u32,
    chunk_bytes: usize,
    seconds: f64,
) -> Result<BareStreams, BenchError> {
    check_relays(relays)?;
    if streams == 0 || streams > STREAMS_MAX {
        return Err(BenchError::refused(format!(
            "bare streams: 1 to {STREAMS_MAX} streams, not {streams}"
        )));
    }
    if chunk_bytes == 0 || chunk_bytes > CHUNK_MAX_BYTES {
        return Err(BenchError::refused(format!(
            "bare streams: writes of 1 to {CHUNK_MAX_BYTES} bytes, not {chunk_bytes}"
        )));
    }
    // Every connection first: a failure here leaves no thread behind.
    let paths = (0..streams)
        .map(|_| Path::connect(relays, seconds))
        .collect::<io::Result<Vec<_>>>()
        .map_err(failed("bare TCP stream: connect"))?;
    let start = Arc::new(Barrier::new(streams as usize + 1));
    let (mut receivers, mut senders, mut all_relays) = (Vec::new(), Vec::new(), Vec::new());
    for mut path in paths {
        all_relays.extend(path.start_relays(chunk_bytes));
        let mut receiver = path.receiver;
        receivers.push(thread::spawn(move || -> io::Result<(u64, Instant)> {
            let mut buf = vec![0u8; chunk_bytes];
            let mut bytes = 0u64;
            loop {
                match receiver.read(&mut buf)? {
                    0 => return Ok((bytes, Instant::now())),
                    n => bytes += n as u64,
                }
            }
        }));
        let (mut stream, start) = (path.sender, Arc::clone(&start));
        senders.push(thread::spawn(move || -> io::Result<u64> {
            let chunk = vec![0x5au8; chunk_bytes];
            let deadline = Duration::from_secs_f64(seconds);
            let mut sent = 0u64;
            start.wait();
            let started = Instant::now();
            while started.elapsed() < deadline {
                stream.write_all(&chunk)?;
                sent += chunk_bytes as u64;
            }
            stream.shutdown(Shutdown::Write)?;
            // Held until the far end has everything and closed: then the relays are done too.
            let _ = stream.read(&mut [0u8; 1]);
            Ok(sent)
        }));
    }
    start.wait();
    let before = CpuSample::now();
    let started = Instant::now();
    let mut bytes = 0u64;
    let mut last = started;
    for receiver in receivers {
        let (got, done) = join(receiver, "bare TCP stream: receiver")?;
        bytes += got;
        last = last.max(done);
    }
    let cpu = before.zip(CpuSample::now()).map(|(b, a)| b.until(&a));
    let mut sent = 0u64;
    for sender in senders {
        sent += join(sender, "bare TCP stream: sender")?;
    }
    join_all(all_relays, "bare TCP stream: relay")?;
    if sent != bytes {
        return Err(BenchError::tool(format!(
            "bare TCP stream: {sent} bytes sent but {bytes} received"
        )));
    }
    let elapsed = last
        .duration_since(started)
        .as_secs_f64()
        .max(f64::MIN_POSITIVE);
    Ok(BareStreams {
        streams,
        relays,
        chunk_bytes: chunk_bytes as u64,
        bytes,
        mib_s: bytes as f64 / (1 << 20) as f64 / elapsed,
        cpu,
        core_s_per_gib: cpu.and_then(|c| c.core_s_per_gib(bytes)),
    })
}

fn check_relays(relays: u32) -> Result<(), BenchError> {
    if relays > RELAYS_MAX {
        return Err(BenchError::refused(format!(
            "bare TCP: at most {RELAYS_MAX} relays, not {relays}"
        )));
    }
    Ok(())
}

/// An I/O error while doing `what`, as a [`BenchError`].
fn failed(what: &'static str) -> impl FnOnce(io::Error) -> BenchError {
    move |e| BenchError::system(what, e)
}

/// One path's sockets, connected: the sender's end, each relay's two, the receiver's end.
struct Path {
    sender: TcpStream,
    /// Each relay's (upstream, downstream) pair, from the sender's side.
    relays: Vec<(TcpStream, TcpStream)>,
    receiver: TcpStream,
}

impl Path {
    /// Connects a path through `relays` relays, every socket timing out a while after a
    /// measurement of `seconds` should be over.
    fn connect(relays: u32, seconds: f64) -> io::Result<Path> {
        let timeout = Duration::from_secs_f64(seconds.max(0.0)) + STALL_TIMEOUT;
        // Link i joins hop i to hop i + 1; the relays are the hops in between.
        let mut links = (0..=relays)
            .map(|_| link(timeout))
            .collect::<io::Result<Vec<_>>>()?
            .into_iter();
        let (sender, mut upstream) = links.next().expect("at least one link");
        let mut pairs = Vec::new();
        for (downstream, next) in links {
            pairs.push((upstream, downstream));
            upstream = next;
        }
        Ok(Path {
            sender,
            relays: pairs,
            receiver: upstream,
        })
    }

    /// Starts a relay on each pair, reading up to `buffer_bytes` at once towards the receiver.
    fn start_relays(&mut self, buffer_bytes: usize) -> Vec<JoinHandle<io::Result<()>>> {
        self.relays
            .drain(..)
            .map(|(upstream, downstream)| {
                thread::spawn(move || relay(upstream, downstream, buffer_bytes))
            })
            .collect()
    }
}

/// Two connected loopback sockets, Nagle off, with `timeout` on every read and write; the
/// listener is gone once they are.
fn link(timeout: Duration) -> io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    let near = TcpStream::connect(listener.local_addr()?)?;
    let (far, _) = listener.accept()?;
    for socket in [&near, &far] {
        socket.set_nodelay(true)?;
        socket.set_read_timeout(Some(timeout))?;
        socket.set_write_timeout(Some(timeout))?;
    }
    Ok((near, far))
}

/// Copies `upstream` to `downstream` (reading up to `buffer_bytes` at once) and back, a
/// thread each way, until both sides close.
fn relay(upstream: TcpStream, downstream: TcpStream, buffer_bytes: usize) -> io::Result<()> {
    let back = {
        let (from, into) = (downstream.try_clone()?, upstream.try_clone()?);
        thread::spawn(move || copy(from, into, RETURN_BUFFER_BYTES))
    };
    let forth = copy(upstream, downstream, buffer_bytes);
    let back = back
        .join()
        .map_err(|_| io::Error::other("the relay's return thread panicked"))?;
    forth.and(back)
}

/// What a relay does one way: read what has arrived, up to `buffer_bytes`, and write it on;
/// at the end, pass the close on. On an error both sockets are shut, so the other way's
/// thread and both ends stop too.
fn copy(mut from: TcpStream, mut into: TcpStream, buffer_bytes: usize) -> io::Result<()> {
    let mut buf = vec![0u8; buffer_bytes];
    let copied = (|| loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            // The far side may have closed already; nothing is lost either way.
            let _ = into.shutdown(Shutdown::Write);
            return Ok(());
        }
        into.write_all(&buf[..n])?;
    })();
    if copied.is_err() {
        let _ = from.shutdown(Shutdown::Both);
        let _ = into.shutdown(Shutdown::Both);
    }
    copied
}

fn join<T>(thread: JoinHandle<io::Result<T>>, who: &str) -> Result<T, BenchError> {
    thread
        .join()
        .map_err(|_| BenchError::tool(format!("{who} thread panicked")))?
        .map_err(|e| BenchError::system(who.to_owned(), e))
}

fn join_all<T>(threads: Vec<JoinHandle<io::Result<T>>>, who: &str) -> Result<(), BenchError> {
    for thread in threads {
        join(thread, who)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_are_measured_direct_and_through_relays() {
        for relays in [0, 1, 2] {
            let us = round_trip_us(relays, 0.05).unwrap();
            assert!(us > 0.0 && us.is_finite(), "{relays} relays: {us}");
        }
    }

    #[test]
    fn every_byte_sent_reaches_its_receiver_through_the_relays() {
        for relays in [0, 1] {
            let measured = streams(2, relays, 64 * 1024, 0.1).unwrap();
            assert_eq!((measured.streams, measured.relays), (2, relays));
            // Whole chunks, at least one from each sender.
            assert!(measured.bytes >= 2 * 64 * 1024, "{measured:?}");
            assert_eq!(measured.bytes % (64 * 1024), 0, "{measured:?}");
            assert!(
                measured.mib_s > 0.0 && measured.mib_s.is_finite(),
                "{measured:?}"
            );
            // The machine was busy meanwhile: the CPU was read and some was spent.
            let cpu = measured.cpu.unwrap();
            assert!(cpu.busy_cores > 0.0, "{measured:?}");
            assert!(measured.core_s_per_gib.unwrap() > 0.0, "{measured:?}");
        }
    }

    #[test]
    fn what_cannot_run_is_refused() {
        assert!(round_trip_us(RELAYS_MAX + 1, 0.01).is_err());
        assert!(streams(0, 0, 1024, 0.01).is_err());
        assert!(streams(STREAMS_MAX + 1, 0, 1024, 0.01).is_err());
        assert!(streams(1, 0, 0, 0.01).is_err());
        assert!(streams(1, 0, CHUNK_MAX_BYTES + 1, 0.01).is_err());
    }
}
