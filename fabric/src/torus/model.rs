//! A torus network as modeled: its torus, rates, time scale, packet size and nodes. Plain
//! values, built from a stack; [`super::TorusNetwork`] runs one, and the switch's handshake
//! compares two by their fingerprint.

use std::time::Duration;

use iopath_topology::{Coord, Torus};

use crate::nid::Nid;

/// One node on the torus.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TorusNode {
    /// Its NID on the torus's network.
    pub nid: Nid,
    /// Its router's coordinate.
    pub coord: Coord,
    /// Its injection and ejection bandwidth, bytes per modeled second.
    pub nic_bandwidth_bytes_s: f64,
}

/// A torus network as modeled.
#[derive(Debug, Clone, PartialEq)]
pub struct TorusModel {
    /// The torus (its dimensions; on Gemini, Y links half as wide).
    pub torus: Torus,
    /// An X link's bandwidth, bytes per modeled second (others scale by their width).
    pub link_bandwidth_bytes_s: f64,
    /// Modeled time a packet takes from leaving a link to reaching the next router.
    pub hop_latency: Duration,
    /// Host seconds per modeled second.
    pub time_scale: f64,
    /// Bytes per packet.
    pub packet_bytes: u32,
    /// The nodes on it.
    pub nodes: Vec<TorusNode>,
}
