//! A [`Stack`] written back as a stack file: every node, address, forwarder and route
//! spelled out, so that reading it again gives the same stack.

use super::file::{
    AddressValue, FyodModeName, HostItem, HostValue, JournalName, LayoutSection, ModelSection,
    NetworkEntry, NodeEntry, RouteEntry, SizeValue, StackFile,
};
use super::stack::{Address, FyodMode, HostRef, NO_FORWARDER, Role, Stack};

impl Stack {
    /// The stack as a file again: one entry per node, addresses and forwarders explicit,
    /// routes one per node. Parsing its text gives back this stack.
    pub fn to_file(&self) -> StackFile {
        let nodes = self
            .nodes
            .iter()
            .map(|n| {
                let nids = n
                    .interfaces
                    .iter()
                    .map(|i| {
                        let value = match i.address {
                            Address::Number(a) => AddressValue::Number(u64::from(a)),
                            Address::Socket(s) => AddressValue::Socket(s.to_string()),
                        };
                        (self.networks[i.network].name.clone(), value)
                    })
                    .collect();
                let mut entry = NodeEntry::new(n.name.clone(), n.role.kind());
                entry.nids = nids;
                entry.torus = n.torus;
                entry.host = n.host.as_ref().map(|h| {
                    HostValue::One(match h {
                        HostRef::Index(i) => HostItem::Index(*i as u64),
                        HostRef::Name(name) => HostItem::Name(name.clone()),
                    })
                });
                entry.admin = n.admin.map(|a| a.to_string());
                entry.nic_bandwidth = n.nic_bandwidth_bytes_s.map(SizeValue::Bytes);
                match n.role {
                    Role::Oss(spec) => {
                        entry.targets = Some(spec.targets);
                        entry.journal = Some(if spec.sync_journal {
                            JournalName::Sync
                        } else {
                            JournalName::Async
                        });
                        entry.commit_interval_ms = Some(spec.commit_interval_ms);
                        entry.recovery_window_ms = Some(spec.recovery_window_ms);
                        if let Some(disk) = spec.disk {
                            entry.disk_bandwidth = Some(SizeValue::Bytes(disk.bandwidth_bytes_s));
                            entry.disk_seek_ms = Some(disk.seek_us as f64 / 1000.0);
                        }
                    }
                    Role::Fyod(spec) => {
                        entry.fyod_mode = Some(match spec.mode {
                            FyodMode::Pfs => FyodModeName::Pfs,
                            FyodMode::Ufs => FyodModeName::Ufs,
                        });
                        if let Some(service) = spec.service {
                            entry.fyod_call_us = Some(service.call_us);
                            entry.fyod_cpus = Some(service.cpus);
                            if let Some((memory, thread)) = service.memory {
                                entry.fyod_memory = Some(SizeValue::Bytes(memory));
                                entry.fyod_thread_memory = Some(SizeValue::Bytes(thread));
                            }
                        }
                    }
                    Role::Client(spec) => {
                        entry.forwarder = Some(match spec.forwarder {
                            Some(f) => self.nodes[f].name.clone(),
                            None => NO_FORWARDER.to_owned(),
                        });
                    }
                    Role::Router(buffers) => {
                        entry.tiny_router_buffers = Some(buffers.tiny_buffers);
                        entry.small_router_buffers = Some(buffers.small_buffers);
                        entry.large_router_buffers = Some(buffers.large_buffers);
                        entry.peer_buffer_credits = Some(buffers.peer_buffer_credits);
                        // Written only when it is not the default, as a reader would set it.
                        entry.check_forwarded_checksums =
                            (!buffers.check_checksums).then_some(false);
                    }
                    Role::Mds => {}
                }
                entry
            })
            .collect();
        let routes = self
            .routes
            .iter()
            .map(|r| RouteEntry {
                from: self.networks[r.via].name.clone(),
                net: self.networks[r.net].name.clone(),
                gateway: self.nodes[r.gateway].name.clone(),
                hops: Some(r.hops),
                priority: Some(r.priority),
                nodes: Some(vec![self.nodes[r.node].name.clone()]),
                set: None,
            })
            .collect();
        StackFile {
            name: self.name.clone(),
            description: self.description.clone(),
            fsname: Some(self.fsname.to_string()),
            layout: LayoutSection {
                stripe_size: Some(SizeValue::Bytes(self.layout.stripe_size_bytes)),
                stripe_count: Some(self.layout.stripe_count),
                stripe_offset: Some(self.layout.stripe_offset),
            },
            route_set: None,
            model: (self.time_scale != 1).then_some(ModelSection {
                time_scale: Some(self.time_scale),
            }),
            networks: self
                .networks
                .iter()
                .map(|n| NetworkEntry {
                    name: n.name.clone(),
                    torus: n.torus,
                    bandwidth: n.link.map(|l| SizeValue::Bytes(l.bandwidth_bytes_s)),
                    latency_us: n.link.map(|l| l.latency_us),
                    hop_by_hop: n.hop_by_hop.then_some(true),
                    subnet: n.subnet.map(|s| s.to_string()),
                })
                .collect(),
            nodes,
            routes,
        }
    }

    /// [`Stack::to_file`] as TOML text.
    pub fn to_toml(&self) -> String {
        let mut text = format!(
            "# Resolved from {}: every node, address and route spelled out.\n",
            self.origin
        );
        text.push_str(&self.to_file().to_toml());
        text
    }
}
