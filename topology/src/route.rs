//! One LNET route as data and as an `lnetctl route add` line.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::coord::Coord;

/// One entry of a client's LNET routing table: "to reach `net`, send through `gateway`".
/// LNET uses the routes of lowest `hops` to a net, round-robin among equals, and higher hop
/// counts only when every lower one is down (Titan paper §IV-B).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// The remote LNET network, e.g. `o2ib201`.
    pub net: String,
    /// The router's NID on the client's own network, e.g. `4044@gni101`.
    pub gateway: String,
    /// LNET hop count (a priority, not a distance): 1 for primaries, 10 for backups on Titan.
    pub hops: u32,
    /// The router's name (`rtr1a-3` on Titan, `sio17` on Jaguar).
    pub router: String,
    /// The router's torus coordinate.
    pub gateway_coord: Coord,
    /// Torus hops from the client to the router under dimension-order routing.
    pub torus_hops: u32,
}

impl Route {
    /// The route as the command that installs it.
    pub fn lnetctl(&self) -> String {
        format!(
            "lnetctl route add --net {} --gateway {} --hop {}",
            self.net, self.gateway, self.hops
        )
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lnetctl())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lnetctl_text() {
        let r = Route {
            net: "o2ib201".into(),
            gateway: "4044@gni101".into(),
            hops: 1,
            router: "rtr1a-1".into(),
            gateway_coord: Coord::new(1, 2, 3),
            torus_hops: 5,
        };
        assert_eq!(
            r.lnetctl(),
            "lnetctl route add --net o2ib201 --gateway 4044@gni101 --hop 1"
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["net"], "o2ib201");
        assert_eq!(json["gateway"], "4044@gni101");
        assert_eq!(json["hops"], 1);
    }
}
