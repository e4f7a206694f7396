//! `iopath lnetctl route add|del|show`: a running node's LNet routes, over its admin service
//! (written to and read from its `routes` parameter).

use clap::Subcommand;

/// `iopath lnetctl`: which node, and the command.
#[derive(Debug, clap::Args)]
pub struct LnetctlArgs {
    /// The node.
    #[command(flatten)]
    node: super::lctl::AdminTarget,
    #[command(subcommand)]
    command: LnetctlCommand,
}

#[derive(Debug, Subcommand)]
enum LnetctlCommand {
    /// Routes to remote networks.
    Route {
        #[command(subcommand)]
        action: RouteAction,
    },
    /// The node's network interfaces.
    Net {
        #[command(subcommand)]
        action: ShowOnly,
    },
    /// The peers the node has talked to, with their credits.
    Peer {
        #[command(subcommand)]
        action: ShowOnly,
    },
    /// The node's LNet counters.
    Stats {
        #[command(subcommand)]
        action: ShowOnly,
    },
}

#[derive(Debug, Subcommand)]
enum ShowOnly {
    /// Show, in lnetctl's YAML.
    Show {
        /// Every field: credits, hops, priorities, states.
        #[arg(short, long)]
        verbose: bool,
    },
}

#[derive(Debug, Subcommand)]
enum RouteAction {
    /// Add a route: reach NET through GATEWAY.
    Add {
        /// The remote network, e.g. tcp1.
        #[arg(long)]
        net: String,
        /// The router's NID on one of the node's networks.
        #[arg(long)]
        gateway: String,
        /// Hop count: lower is preferred; equal routes share traffic round-robin.
        #[arg(long, default_value_t = 1)]
        hop: u32,
        /// Priority, considered before hops: lower is preferred.
        #[arg(long, default_value_t = 0)]
        priority: u32,
    },
    /// Delete a route.
    Del {
        /// The remote network.
        #[arg(long)]
        net: String,
        /// The router's NID.
        #[arg(long)]
        gateway: String,
    },
    /// Show the routing table, in lnetctl's YAML (`-v`: hops, priority, state).
    Show {
        /// Hops, priority and state too.
        #[arg(short, long)]
        verbose: bool,
    },
}

/// Runs `iopath lnetctl`.
pub async fn run(args: LnetctlArgs) -> anyhow::Result<()> {
    let client = args.node.client().await?;
    let param = |name: &'static str| {
        let client = &client;
        async move {
            let values = client.get_param(name).await?;
            Ok::<_, anyhow::Error>(values.into_iter().map(|p| p.value).collect::<String>())
        }
    };
    let yaml = match args.command {
        LnetctlCommand::Route { action } => {
            let command = match action {
                RouteAction::Add {
                    net,
                    gateway,
                    hop,
                    priority,
                } => format!("add {net} {gateway} {hop} {priority}"),
                RouteAction::Del { net, gateway } => format!("del {net} {gateway}"),
                RouteAction::Show { verbose } => {
                    let text = param("routes").await?;
                    print(&yaml::routes(&text, verbose)?)?;
                    return Ok(());
                }
            };
            client.set_param("routes", &command).await?;
            return Ok(());
        }
        LnetctlCommand::Net {
            action: ShowOnly::Show { verbose },
        } => yaml::nets(&param("nis").await?, verbose)?,
        LnetctlCommand::Peer {
            action: ShowOnly::Show { verbose },
        } => yaml::peers(&param("peers").await?, verbose)?,
        LnetctlCommand::Stats {
            action: ShowOnly::Show { .. },
        } => yaml::stats(&param("stats").await?)?,
    };
    print(&yaml)
}

fn print(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

/// The node's text views (`routes`, `nis`, `peers`, `stats`, as `lctl get_param` shows them)
/// said in lnetctl's YAML: the same keys lnetctl prints, so scripts written for it read them.
mod yaml {
    use std::collections::BTreeMap;

    use anyhow::{Context as _, bail};
    use serde::Serialize;

    /// A view's table: its header's columns and its rows, by position (the peers view has
    /// two `min` columns).
    struct Table {
        columns: Vec<String>,
        rows: Vec<Vec<String>>,
    }

    impl Table {
        /// The table that starts at the line whose first word is `first`.
        fn parse(text: &str, first: &str) -> anyhow::Result<Table> {
            let mut lines = text
                .lines()
                .skip_while(|l| l.split_whitespace().next() != Some(first));
            let header = lines
                .next()
                .with_context(|| format!("no table headed {first:?} in {text:?}"))?;
            let columns: Vec<String> = header.split_whitespace().map(str::to_owned).collect();
            let mut rows = Vec::new();
            for line in lines.filter(|l| !l.trim().is_empty()) {
                let row: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
                if row.len() != columns.len() {
                    bail!(
                        "a row of {} fields under {} columns: {line:?}",
                        row.len(),
                        columns.len()
                    );
                }
                rows.push(row);
            }
            Ok(Table { columns, rows })
        }

        /// Column `name`'s `nth` occurrence (0 for the first) in `row`.
        fn get<'a>(&self, row: &'a [String], name: &str, nth: usize) -> anyhow::Result<&'a str> {
            let index = self
                .columns
                .iter()
                .enumerate()
                .filter(|(_, c)| *c == name)
                .nth(nth)
                .map(|(i, _)| i)
                .with_context(|| format!("no column {name:?} in {:?}", self.columns))?;
            Ok(&row[index])
        }

        fn number(&self, row: &[String], name: &str, nth: usize) -> anyhow::Result<i64> {
            let text = self.get(row, name, nth)?;
            text.parse()
                .with_context(|| format!("column {name:?}: {text:?} is not a number"))
        }
    }

    fn to_yaml(value: &impl Serialize) -> anyhow::Result<String> {
        serde_norway::to_string(value).context("write YAML")
    }

    #[derive(Serialize)]
    struct Route {
        net: String,
        gateway: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        hop: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        priority: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        state: Option<String>,
    }

    /// `lnetctl route show [-v]`.
    pub fn routes(text: &str, verbose: bool) -> anyhow::Result<String> {
        let table = Table::parse(text, "net")?;
        let mut routes = Vec::new();
        for row in &table.rows {
            routes.push(Route {
                net: table.get(row, "net", 0)?.to_owned(),
                gateway: table.get(row, "router", 0)?.to_owned(),
                hop: verbose.then(|| table.number(row, "hops", 0)).transpose()?,
                priority: verbose
                    .then(|| table.number(row, "priority", 0))
                    .transpose()?,
                state: verbose
                    .then(|| table.get(row, "state", 0).map(str::to_owned))
                    .transpose()?,
            });
        }
        to_yaml(&BTreeMap::from([("route", routes)]))
    }

    #[derive(Serialize)]
    struct Net {
        #[serde(rename = "net type")]
        net_type: String,
        #[serde(rename = "local NI(s)")]
        local_nis: Vec<Ni>,
    }

    #[derive(Serialize)]
    struct Ni {
        nid: String,
        status: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        tunables: Option<Tunables>,
        #[serde(skip_serializing_if = "Option::is_none")]
        credits: Option<NiCredits>,
    }

    #[derive(Serialize)]
    struct Tunables {
        peer_credits: i64,
        peer_buffer_credits: i64,
        credits: i64,
    }

    #[derive(Serialize)]
    struct NiCredits {
        available_tx_credits: i64,
        min_tx_credits: i64,
        refcount: i64,
    }

    /// `lnetctl net show [-v]`: the interfaces grouped by network.
    pub fn nets(text: &str, verbose: bool) -> anyhow::Result<String> {
        let table = Table::parse(text, "nid")?;
        let mut nets: Vec<Net> = Vec::new();
        for row in &table.rows {
            let nid = table.get(row, "nid", 0)?.to_owned();
            let net_type = nid
                .rsplit_once('@')
                .map(|(_, net)| net.to_owned())
                .with_context(|| format!("{nid:?} is not a NID"))?;
            let ni = Ni {
                nid,
                status: table.get(row, "status", 0)?.to_owned(),
                tunables: verbose
                    .then(|| {
                        Ok::<_, anyhow::Error>(Tunables {
                            peer_credits: table.number(row, "peer", 0)?,
                            peer_buffer_credits: table.number(row, "rtr", 0)?,
                            credits: table.number(row, "max", 0)?,
                        })
                    })
                    .transpose()?,
                credits: verbose
                    .then(|| {
                        Ok::<_, anyhow::Error>(NiCredits {
                            available_tx_credits: table.number(row, "tx", 0)?,
                            min_tx_credits: table.number(row, "min", 0)?,
                            refcount: table.number(row, "refs", 0)?,
                        })
                    })
                    .transpose()?,
            };
            match nets.iter_mut().find(|n| n.net_type == net_type) {
                Some(net) => net.local_nis.push(ni),
                None => nets.push(Net {
                    net_type,
                    local_nis: vec![ni],
                }),
            }
        }
        to_yaml(&BTreeMap::from([("net", nets)]))
    }

    #[derive(Serialize)]
    struct Peer {
        #[serde(rename = "primary nid")]
        primary_nid: String,
        #[serde(rename = "Multi-Rail")]
        multi_rail: bool,
        #[serde(rename = "peer ni")]
        peer_ni: Vec<PeerNi>,
    }

    #[derive(Serialize)]
    struct PeerNi {
        nid: String,
        state: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_ni_tx_credits: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        available_tx_credits: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        min_tx_credits: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tx_q_num_of_buf: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        available_rtr_credits: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        min_rtr_credits: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        refcount: Option<i64>,
    }

    /// `lnetctl peer show [-v]`: a peer per NID (no multi-rail here).
    pub fn peers(text: &str, verbose: bool) -> anyhow::Result<String> {
        let table = Table::parse(text, "nid")?;
        let mut peers = Vec::new();
        for row in &table.rows {
            let nid = table.get(row, "nid", 0)?.to_owned();
            let n =
                |name: &str, nth: usize| verbose.then(|| table.number(row, name, nth)).transpose();
            peers.push(Peer {
                primary_nid: nid.clone(),
                multi_rail: false,
                peer_ni: vec![PeerNi {
                    nid,
                    state: table.get(row, "state", 0)?.to_owned(),
                    max_ni_tx_credits: n("max", 0)?,
                    available_tx_credits: n("tx", 0)?,
                    min_tx_credits: n("min", 1)?,
                    tx_q_num_of_buf: n("queue", 0)?,
                    available_rtr_credits: n("rtr", 0)?,
                    min_rtr_credits: n("min", 0)?,
                    refcount: n("refs", 0)?,
                }],
            });
        }
        to_yaml(&BTreeMap::from([("peer", peers)]))
    }

    /// `lnetctl stats show`: the counters, by name.
    pub fn stats(text: &str) -> anyhow::Result<String> {
        let mut counters = BTreeMap::new();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) else {
                continue;
            };
            if let Ok(value) = value.parse::<u64>() {
                counters.insert(name.to_owned(), value);
            }
        }
        if counters.is_empty() {
            bail!("no counters in {text:?}");
        }
        to_yaml(&BTreeMap::from([("statistics", counters)]))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        const ROUTES: &str = "routes=\nRouting disabled\nnet      hops priority   state router\ntcp0        1        0      up 127.0.0.1:22548@tcp1\ntcp2        3        1    down 127.0.0.1:2@tcp1\n";
        const PEERS: &str = "peers=\nnid                      refs state  last   max   rtr   min    tx   min queue\n127.0.0.1:22548@tcp1        1    up     0     8     6     5     7     3     0\n";

        #[test]
        fn routes_say_net_and_gateway_and_with_v_hops_priority_and_state() {
            let plain: serde_norway::Value =
                serde_norway::from_str(&routes(ROUTES, false).unwrap()).unwrap();
            assert_eq!(plain["route"][1]["net"], "tcp2");
            assert_eq!(plain["route"][1]["gateway"], "127.0.0.1:2@tcp1");
            assert!(plain["route"][1].get("hop").is_none());
            let v: serde_norway::Value =
                serde_norway::from_str(&routes(ROUTES, true).unwrap()).unwrap();
            assert_eq!(v["route"][1]["hop"], 3);
            assert_eq!(v["route"][1]["priority"], 1);
            assert_eq!(v["route"][1]["state"], "down");
        }

        #[test]
        fn peers_take_each_min_column_for_its_own_credit() {
            let v: serde_norway::Value =
                serde_norway::from_str(&peers(PEERS, true).unwrap()).unwrap();
            let ni = &v["peer"][0]["peer ni"][0];
            assert_eq!(ni["min_rtr_credits"], 5);
            assert_eq!(ni["min_tx_credits"], 3);
            assert_eq!(ni["available_tx_credits"], 7);
            assert_eq!(ni["available_rtr_credits"], 6);
        }

        #[test]
        fn a_view_that_does_not_parse_is_an_error_not_an_empty_list() {
            assert!(routes("routes=\nsomething else\n", false).is_err());
            assert!(peers("peers=\nnid refs\nx\n", true).is_err());
            assert!(stats("stats=\n").is_err());
        }
    }
}
