//! Stack files: the presets parse and mean what they say; bad files get errors that name the
//! field.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use iopath_fabric::router::RouterConfig;
use iopath_stack::schema::{Address, FyodMode, Role, RoleName, Stack};
use iopath_stack::{PRESETS, StackError, preset};

#[test]
fn every_preset_parses_and_round_trips() {
    for p in PRESETS {
        let stack = p.stack().unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert_eq!(stack.name, p.name);
        // Written out and read back, a stack is the same stack.
        let again = Stack::parse(&stack.to_toml(), &stack.origin).unwrap();
        assert_eq!(again.nodes, stack.nodes, "{}", p.name);
        assert_eq!(again.routes, stack.routes, "{}", p.name);
        assert_eq!(again.layout, stack.layout, "{}", p.name);
    }
}

#[test]
fn asci_red_mini_is_clients_fyods_osss() {
    let stack = preset("asci-red-mini").unwrap().stack().unwrap();
    assert_eq!(stack.nodes_of(RoleName::Client).len(), 8);
    assert_eq!(stack.nodes_of(RoleName::Fyod).len(), 2);
    assert_eq!(stack.nodes_of(RoleName::Oss).len(), 2);
    assert_eq!(stack.targets().len(), 4);
    // Clients are shared out to the fyods in blocks.
    let fyods = stack.nodes_of(RoleName::Fyod);
    for (rank, c) in stack.nodes_of(RoleName::Client).into_iter().enumerate() {
        let Role::Client(spec) = stack.nodes[c].role else {
            panic!("not a client")
        };
        assert_eq!(
            spec.forwarder,
            Some(fyods[rank / 4]),
            "{}",
            stack.nodes[c].name
        );
    }
    for f in fyods {
        assert!(matches!(
            stack.nodes[f].role,
            Role::Fyod(s) if s.mode == FyodMode::Pfs
        ));
    }
    assert_eq!(stack.layout.stripe_count, -1);
    assert_eq!(stack.primary_nid(stack.mds()).to_string(), "1@mem0");
    assert_eq!(
        stack.nodes[stack.node_index("c3").unwrap()].torus,
        Some([3, 0, 0])
    );
}

#[test]
fn spider_mini_is_direct_attached() {
    let stack = preset("spider-mini").unwrap().stack().unwrap();
    assert!(stack.routes.is_empty());
    assert!(stack.nodes_of(RoleName::Fyod).is_empty());
    for c in stack.nodes_of(RoleName::Client) {
        assert_eq!(
            stack.nodes[c].role,
            Role::Client(iopath_stack::schema::ClientSpec { forwarder: None })
        );
    }
    // Targets alternate between the servers, as Lustre numbers OSTs.
    let oss0 = stack.node_index("oss0").unwrap();
    let oss1 = stack.node_index("oss1").unwrap();
    assert_eq!(
        stack.targets(),
        vec![(oss0, 0), (oss1, 0), (oss0, 1), (oss1, 1)]
    );
}

#[test]
fn spider_mini_routed_has_two_route_sets() {
    let p = preset("spider-mini-routed").unwrap();
    let stack = p.stack().unwrap();
    assert_eq!(
        stack.route_sets,
        vec!["fine-grained".to_owned(), "round-robin".to_owned()]
    );
    let c0 = stack.node_index("c0").unwrap();
    let routes = stack.routes_of(c0);
    // Round-robin: two equal routers per leaf.
    assert_eq!(routes.len(), 4);
    assert!(routes.iter().all(|r| r.hops == 1));
    let mut file = p.file().unwrap();
    file.route_set = Some("fine-grained".into());
    let fine = Stack::from_file(&file, "test").unwrap();
    let routes = fine.routes_of(c0);
    assert_eq!(routes.len(), 4);
    assert_eq!(routes.iter().filter(|r| r.hops == 1).count(), 2);
    let near: Vec<String> = routes
        .iter()
        .filter(|r| r.hops == 1)
        .map(|r| r.gateway.to_string())
        .collect();
    assert_eq!(near, vec!["50@mem0".to_owned(), "52@mem0".to_owned()]);
    // The storage side reaches the torus through its leaf's routers.
    let oss1 = stack.node_index("oss1").unwrap();
    let back: Vec<String> = stack
        .routes_of(oss1)
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert_eq!(
        back,
        vec![
            "mem0 via 52@mem2 hops 1 priority 0",
            "mem0 via 53@mem2 hops 1 priority 0"
        ]
    );
}

#[test]
fn sockets_replace_numbers_for_processes() {
    let stack = preset("spider-mini").unwrap().stack().unwrap();
    let mut port = 7000;
    let tcp = stack
        .with_sockets(|_, _| {
            port += 1;
            Ok(format!("127.0.0.1:{port}").parse().unwrap())
        })
        .unwrap();
    assert!(tcp.is_tcp());
    assert!(!stack.is_tcp());
    assert!(tcp.nodes.iter().all(|n| {
        n.interfaces
            .iter()
            .all(|i| matches!(i.address, Address::Socket(_)))
    }));
    assert_eq!(
        tcp.primary_nid(tcp.mds()).to_string(),
        "127.0.0.1:7011@tcp0"
    );
    let again = Stack::parse(&tcp.to_toml(), "resolved").unwrap();
    assert_eq!(again.nodes, tcp.nodes);
}

/// The error for `text`, which must be refused.
fn refused(text: &str) -> String {
    match Stack::parse(text, "test.toml") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

const HEAD: &str = r#"
name = "t"
[[networks]]
name = "net0"
[[nodes]]
name = "mds"
role = "mds"
nids = { net0 = 1 }
"#;

fn with(extra: &str) -> String {
    format!("{HEAD}\n{extra}")
}

#[test]
fn bad_files_are_refused_with_the_field_named() {
    let oss = "[[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = { net0 = 2 }\n";
    let cases: Vec<(String, &[&str])> = vec![
        ("name = ".into(), &["test.toml", "line 1"]),
        (
            with(&format!("{oss}colour = 3")),
            &["unknown field", "colour"],
        ),
        (
            with("[[nodes]]\nname = \"x\"\nrole = \"wizard\"\nnids = { net0 = 2 }"),
            &["wizard", "mds"],
        ),
        (HEAD.into(), &["nodes", "no oss node"]),
        (
            with(&format!("{oss}targets = 0")),
            &["nodes[1] (oss).targets", "1 to 64"],
        ),
        (
            // The mds, the oss and 19,999 clients: one past the limit.
            with(&format!(
                "{oss}[[nodes]]\nname = \"c\"\nrole = \"client\"\ncount = 19999\nnids = {{ net0 = 100 }}"
            )),
            &["nodes[2] (c).count", "more than 20000 nodes"],
        ),
        (
            with(&format!("{oss}fyod_mode = \"pfs\"")),
            &["nodes[1] (oss).fyod_mode", "fyod nodes only"],
        ),
        (
            with("[[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = { net9 = 2 }"),
            &["nodes[1] (oss).nids.net9", "no network named"],
        ),
        (
            with("[[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = { net0 = 1 }"),
            &["nodes (oss).nids.net0", "mds has the same address"],
        ),
        (
            with("[[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = { net0 = \"localhost\" }"),
            &["nodes[1] (oss).nids.net0", "host:port"],
        ),
        (
            with(&format!(
                "{oss}[[nodes]]\nname = \"c\"\nrole = \"client\"\nnids = {{ net0 = 3 }}\nforwarder = \"oss\""
            )),
            &["nodes (c).forwarder", "not a fyod"],
        ),
        (
            with(&format!(
                "{oss}[[nodes]]\nname = \"c\"\nrole = \"client\"\nnids = {{ net0 = 3 }}\ntorus = [0, 0, 0]"
            )),
            &["nodes[2] (c).torus", "torus dimensions"],
        ),
        (
            with(&format!("{oss}[layout]\nstripe_size = \"100k\"")),
            &["layout.stripe_size", "64 KiB"],
        ),
        (
            with(&format!("{oss}[layout]\nstripe_count = -2")),
            &["layout.stripe_count"],
        ),
        (
            with(&format!(
                "{oss}[[nodes]]\nname = \"mds2\"\nrole = \"mds\"\nnids = {{ net0 = 9 }}"
            )),
            &["2 mds nodes"],
        ),
        (
            with(&format!(
                "{oss}[[nodes]]\nname = \"r\"\nrole = \"router\"\nnids = {{ net0 = 9 }}"
            )),
            &["nodes (r).nids", "two networks"],
        ),
        (
            with(&format!("{oss}large_router_buffers = 4")),
            &["nodes[1] (oss).large_router_buffers", "router nodes only"],
        ),
        (
            with(&format!("{oss}check_forwarded_checksums = false")),
            &[
                "nodes[1] (oss).check_forwarded_checksums",
                "router nodes only",
            ],
        ),
        (
            with(&format!(
                "{oss}[[networks]]\nname = \"net1\"\n[[nodes]]\nname = \"r\"\nrole = \"router\"\nnids = {{ net0 = 9, net1 = 9 }}\npeer_buffer_credits = 0"
            )),
            &["nodes[2] (r).peer_buffer_credits", "1 to 65536"],
        ),
        (
            with(&format!("{oss}route_set = \"fast\"")),
            &["unknown field"],
        ),
        (
            with(&format!(
                "{oss}[[nodes]]\nname = \"a b\"\nrole = \"client\"\nnids = {{ net0 = 3 }}"
            )),
            &["nodes[2].name", "letters"],
        ),
    ];
    for (text, needles) in cases {
        let error = refused(&text);
        for needle in needles {
            assert!(
                error.contains(needle),
                "error {error:?} should mention {needle:?}\n{text}"
            );
        }
    }
}

#[test]
fn router_buffers_are_set_as_lnet_names_them_and_default_otherwise() {
    let text = preset("spider-mini-routed").unwrap().text.replace(
        "name = \"rtr0\"\nrole = \"router\"",
        "name = \"rtr0\"\nrole = \"router\"\nlarge_router_buffers = 2\npeer_buffer_credits = 1\ncheck_forwarded_checksums = false",
    );
    let stack = Stack::parse(&text, "starved.toml").unwrap();
    let buffers = |name: &str| match stack.nodes.iter().find(|n| n.name == name).unwrap().role {
        Role::Router(b) => b,
        other => panic!("{name} is {other:?}"),
    };
    let starved = buffers("rtr0");
    assert_eq!((starved.large_buffers, starved.peer_buffer_credits), (2, 1));
    assert!(
        !starved.check_checksums,
        "the file turned the router's check off"
    );
    // What the file leaves out keeps the fabric's default.
    let d = RouterConfig::default();
    assert_eq!(
        (
            starved.tiny_buffers,
            starved.small_buffers,
            starved.peers_max
        ),
        (d.tiny_buffers, d.small_buffers, d.peers_max)
    );
    assert_eq!(buffers("rtr1"), d);
    // Written out, the settings stay.
    let again = Stack::parse(&stack.to_toml(), "again.toml").unwrap();
    assert_eq!(again.nodes, stack.nodes);
}

#[test]
fn modeled_links_are_checked_and_kept() {
    let oss = "[[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = { net0 = 2 }\n";
    let net = |extra: &str| {
        format!(
            "name = \"t\"\n{extra}\n[[networks]]\nname = \"net0\"\nNET\n[[nodes]]\nname = \"mds\"\nrole = \"mds\"\nnids = {{ net0 = 1 }}\n{oss}"
        )
    };
    let cases = [
        (
            net("").replace("NET", "bandwidth = 0"),
            "networks[0] (net0).bandwidth",
        ),
        (
            net("").replace("NET", "bandwidth = \"fast\""),
            "networks[0] (net0).bandwidth",
        ),
        (
            net("").replace("NET", "bandwidth = -5"),
            "-5: a size or rate cannot be negative",
        ),
        (
            net("").replace("NET", "bandwidth = 1.5"),
            "give whole bytes",
        ),
        (
            net("").replace("NET", "latency_us = 5"),
            "needs a modeled bandwidth",
        ),
        (
            net("").replace("NET", "bandwidth = \"1g\"\nlatency_us = 5000000"),
            "networks[0] (net0).latency_us",
        ),
        (
            net("[model]\ntime_scale = 0").replace("NET", "bandwidth = \"1g\""),
            "model.time_scale",
        ),
        (
            net("[model]\ntime_scale = 10").replace("NET", ""),
            "scales nothing",
        ),
    ];
    for (text, needle) in cases {
        let error = refused(&text);
        assert!(
            error.contains(needle),
            "{error:?} should say {needle:?}\n{text}"
        );
    }
    let text =
        net("[model]\ntime_scale = 20").replace("NET", "bandwidth = \"3200m\"\nlatency_us = 2");
    let stack = Stack::parse(&text, "modeled.toml").unwrap();
    let model = stack.link_model(0).unwrap();
    assert_eq!(model.bandwidth_bytes_s, (3200u64 << 20) as f64);
    assert_eq!(model.time_scale, 20.0);
    assert_eq!(model.latency, std::time::Duration::from_micros(2));
    assert!(stack.modeled().contains("net0") && stack.modeled().contains("time scale 20"));
    let again = Stack::parse(&stack.to_toml(), "again.toml").unwrap();
    assert_eq!(again.networks, stack.networks);
    assert_eq!(again.time_scale, 20);
    // Without a model, nothing is modeled and every network runs at the host's speed.
    let plain = preset("spider-mini").unwrap().stack().unwrap();
    assert!(!plain.is_modeled() && plain.link_model(0).is_none());
    assert_eq!(plain.modeled(), "nothing");
}

#[test]
fn modeled_disks_are_checked_scaled_and_kept() {
    let oss = |fields: &str| {
        with(&format!(
            "[[nodes]]\nname = \"oss\"\nrole = \"oss\"\ncount = 2\nnids = {{ net0 = 2 }}\n{fields}\n"
        ))
    };
    let cases = [
        (oss("disk_bandwidth = 0"), "nodes[1] (oss).disk_bandwidth"),
        (oss("disk_bandwidth = \"slow\""), "disk_bandwidth"),
        (oss("disk_seek_ms = 8"), "needs a modeled disk"),
        (
            oss("disk_bandwidth = \"190m\"\ndisk_seek_ms = -1"),
            "disk_seek_ms",
        ),
        (
            oss("disk_bandwidth = \"190m\"\ndisk_seek_ms = 5000"),
            "disk_seek_ms",
        ),
        (
            with(
                "[[nodes]]\nname = \"r\"\nrole = \"router\"\nnids = { net0 = 9 }\ndisk_bandwidth = \"1g\"\n",
            ),
            "applies to oss nodes only",
        ),
    ];
    for (text, needle) in cases {
        let error = refused(&text);
        assert!(
            error.contains(needle),
            "{error:?} should say {needle:?}\n{text}"
        );
    }
    // A disk alone is something for the time scale to scale.
    let text = format!(
        "{}\n[model]\ntime_scale = 4\n",
        oss("disk_bandwidth = \"200m\"\ndisk_seek_ms = 8")
    );
    let stack = Stack::parse(&text, "disks.toml").unwrap();
    assert!(stack.is_modeled());
    let servers = stack.nodes_of(RoleName::Oss);
    assert_eq!(servers.len(), 2);
    for &i in &servers {
        // Host time: four times slower, seeks four times longer.
        let model = stack.disk_model(i).unwrap();
        assert_eq!(model.bandwidth_mib_s, 50.0);
        assert_eq!(model.seek_ms, 32.0);
    }
    assert!(stack.disk_model(0).is_none(), "the MDS has no modeled disk");
    let said = stack.modeled();
    assert!(
        said.contains("oss0, oss1 (200 MiB/s, seek 8 ms)") && said.contains("time scale 4"),
        "{said}"
    );
    let again = Stack::parse(&stack.to_toml(), "again.toml").unwrap();
    assert_eq!(again.nodes, stack.nodes);
    assert_eq!(again.time_scale, 4);
}

#[test]
fn a_nodes_nic_rate_replaces_its_networks_and_is_checked() {
    let text = |rtr: &str, extra: &str| {
        format!(
            "name = \"t\"\n[[networks]]\nname = \"net0\"\nbandwidth = \"3200m\"\nlatency_us = 2\n[[nodes]]\nname = \"mds\"\nrole = \"mds\"\nnids = {{ net0 = 1 }}\n[[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = {{ net0 = 2 }}\n[[nodes]]\nname = \"fyod\"\nrole = \"fyod\"\nnids = {{ net0 = 3 }}\n{rtr}\n{extra}"
        )
    };
    for (field, needle) in [
        ("nic_bandwidth = 0", "nodes[2] (fyod).nic_bandwidth"),
        ("nic_bandwidth = \"quick\"", "nodes[2] (fyod).nic_bandwidth"),
    ] {
        let error = refused(&text(field, ""));
        assert!(error.contains(needle), "{error:?} should say {needle:?}");
    }
    let stack = Stack::parse(
        &text("nic_bandwidth = \"800m\"", "[model]\ntime_scale = 8"),
        "nic.toml",
    )
    .unwrap();
    let fyod = stack.node_index("fyod").unwrap();
    let oss = stack.node_index("oss").unwrap();
    let own = stack.interface_link(fyod, 0).unwrap();
    assert_eq!(own.bandwidth_bytes_s, (800u64 << 20) as f64, "its own rate");
    assert_eq!(
        own.latency,
        std::time::Duration::from_micros(2),
        "the network's latency"
    );
    assert_eq!(own.time_scale, 8.0);
    assert_eq!(
        stack.interface_link(oss, 0).unwrap().bandwidth_bytes_s,
        (3200u64 << 20) as f64,
        "the others keep the network's"
    );
    assert!(
        stack.modeled().contains("the NICs of fyod (839 MB/s)"),
        "{}",
        stack.modeled()
    );
    let again = Stack::parse(&stack.to_toml(), "again.toml").unwrap();
    assert_eq!(again.nodes, stack.nodes);
    // A NIC rate alone is something to model, and to scale.
    let plain = text("nic_bandwidth = 1000", "[model]\ntime_scale = 8")
        .replace("bandwidth = \"3200m\"\nlatency_us = 2\n", "");
    let stack = Stack::parse(&plain, "nic-only.toml").unwrap();
    assert!(stack.is_modeled());
    assert!(
        stack
            .interface_link(stack.node_index("oss").unwrap(), 0)
            .is_none()
    );
    assert_eq!(
        stack.interface_link(fyod, 0).unwrap().latency,
        std::time::Duration::ZERO
    );
}

#[test]
fn an_unreachable_storage_server_is_refused() {
    let text = r#"
name = "t"
[[networks]]
name = "net0"
[[networks]]
name = "net1"
[[nodes]]
name = "mds"
role = "mds"
nids = { net0 = 1 }
[[nodes]]
name = "oss"
role = "oss"
nids = { net1 = 2 }
[[nodes]]
name = "c"
role = "client"
nids = { net0 = 3 }
"#;
    let error = refused(text);
    assert!(error.contains("cannot reach oss (2@mem1)"), "{error}");
    assert!(error.contains("no route"), "{error}");
    // A router and routes both ways make it reachable.
    let routed = format!(
        "{text}
[[nodes]]
name = \"r\"
role = \"router\"
nids = {{ net0 = 9, net1 = 9 }}
[[routes]]
from = \"net0\"
net = \"net1\"
gateway = \"r\"
"
    );
    let error = refused(&routed);
    assert!(error.contains("cannot answer c"), "{error}");
    let both = format!("{routed}\n[[routes]]\nfrom = \"net1\"\nnet = \"net0\"\ngateway = \"r\"\n");
    Stack::parse(&both, "test.toml").unwrap();
}

#[test]
fn an_unknown_preset_lists_the_known_ones() {
    let error = preset("jaguar").unwrap_err();
    assert!(matches!(error, StackError::UnknownPreset { .. }));
    assert!(
        error.to_string().contains("asci-red-mini, spider-mini"),
        "{error}"
    );
}

#[test]
fn the_file_system_name_defaults_to_iopath_and_is_checked_as_lustre_checks_it() {
    let oss = "[[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = { net0 = 2 }\ntargets = 4\n";
    let named = |fsname: &str| format!("fsname = {fsname:?}\n{}", with(oss));
    let stack = Stack::parse(&with(oss), "test.toml").unwrap();
    assert_eq!(stack.fsname.as_str(), "iopath");
    assert_eq!(stack.target_name(3).to_string(), "iopath-OST0003");

    let stack = Stack::parse(&named("my-fs_1"), "test.toml").unwrap();
    assert_eq!(stack.target_name(3).to_string(), "my-fs_1-OST0003");
    assert_eq!(stack.target_name(3).uuid(), "my-fs_1-OST0003_UUID");
    let again = Stack::parse(&stack.to_toml(), "resolved").unwrap();
    assert_eq!(
        again.fsname, stack.fsname,
        "the resolved file keeps the name"
    );

    let table = [
        (
            "",
            "test.toml: fsname: \"\" is not a file system name: it is empty",
        ),
        (
            "ninechars",
            "test.toml: fsname: \"ninechars\" is not a file system name: it has 9 characters; \
             Lustre allows 1 to 8",
        ),
        (
            "lustre.1",
            "test.toml: fsname: \"lustre.1\" is not a file system name: it has '.'; Lustre \
             allows letters, digits, '_' and '-'",
        ),
        (
            "a b",
            "test.toml: fsname: \"a b\" is not a file system name: it has ' '; Lustre allows \
             letters, digits, '_' and '-'",
        ),
    ];
    for (fsname, error) in table {
        assert_eq!(refused(&named(fsname)), error, "{fsname:?}");
    }
}

/// A line of four routers (a 4x1x1 torus crossed hop by hop): the MDS, a client, an OSS.
fn hop_by_hop_text(network: &str, model: &str) -> String {
    format!(
        "name = \"line\"\n{model}\n[[networks]]\nname = \"torus0\"\ntorus = [4, 1, 1]\n{network}\n\
         [[nodes]]\nname = \"mds\"\nrole = \"mds\"\nnids = {{ torus0 = 1 }}\ntorus = [3, 0, 0]\n\
         [[nodes]]\nname = \"c\"\nrole = \"client\"\nnids = {{ torus0 = 100 }}\ntorus = [0, 0, 0]\n\
         [[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = {{ torus0 = 10 }}\ntorus = [2, 0, 0]\n"
    )
}

#[test]
fn a_torus_crossed_hop_by_hop_is_checked_and_kept() {
    let link = "bandwidth = \"640m\"\nlatency_us = 1\nhop_by_hop = true";
    let cases = [
        (
            hop_by_hop_text("hop_by_hop = true", ""),
            "networks[0] (torus0).hop_by_hop",
        ),
        (
            hop_by_hop_text(link, "").replace("torus = [4, 1, 1]\n", ""),
            "networks[0] (torus0).hop_by_hop",
        ),
        (
            hop_by_hop_text(link, "[model]\ntime_scale = 4").replace("torus = [2, 0, 0]\n", ""),
            "nodes (oss).torus",
        ),
        (
            // 671 MB/s a link at time scale 1: faster than the model keeps pace with.
            hop_by_hop_text(link, ""),
            "use a time_scale of at least 2",
        ),
    ];
    for (text, needle) in cases {
        let error = refused(&text);
        assert!(
            error.contains(needle),
            "{error:?} should say {needle:?}\n{text}"
        );
    }
    let stack = Stack::parse(
        &hop_by_hop_text(link, "[model]\ntime_scale = 4"),
        "line.toml",
    )
    .unwrap();
    assert!(stack.networks[0].hop_by_hop);
    let model = stack.torus_model(0).unwrap();
    assert_eq!(model.torus.dims(), [4, 1, 1]);
    assert_eq!(model.time_scale, 4.0);
    let coords: Vec<u32> = model.nodes.iter().map(|n| n.coord.x).collect();
    assert_eq!(coords, [3, 0, 2], "every node at its coordinates");
    // Hop by hop, the bandwidth is the torus's, not an interface's.
    assert!(stack.link_model(0).is_some() && stack.modeled().contains("per directed link"));
    assert!(!stack.modeled().contains("each interface's sending side"));
    let again = Stack::parse(&stack.to_toml(), "again.toml").unwrap();
    assert_eq!(again.networks, stack.networks);
    // Without hop_by_hop the same network is an interface link, and no torus is modeled.
    let plain = Stack::parse(
        &hop_by_hop_text("bandwidth = \"640m\"", "[model]\ntime_scale = 4"),
        "plain.toml",
    )
    .unwrap();
    assert!(plain.torus_model(0).is_none());
    // Spread over hosts, its one model could not serve every node: `iopath launch` refuses
    // it, naming the ways that run it; the stack without a torus model passes.
    let error = stack.check_spread("iopath launch").unwrap_err().to_string();
    assert!(
        error.contains("torus0 is crossed hop by hop")
            && error.contains("embedded or with --processes"),
        "{error}"
    );
    plain.check_spread("iopath launch").unwrap();
}

#[test]
fn a_fyods_modeled_service_node_is_checked_scaled_and_kept() {
    let fyod = |fields: &str| {
        with(&format!(
            "[[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = {{ net0 = 2 }}\n\
             [[nodes]]\nname = \"fyod\"\nrole = \"fyod\"\ncount = 2\nnids = {{ net0 = 3 }}\n{fields}\n"
        ))
    };
    let cases = [
        (fyod("fyod_call_us = 0"), "nodes[2] (fyod).fyod_call_us"),
        (fyod("fyod_call_us = 2000000"), "fyod_call_us"),
        (fyod("fyod_call_us = 100\nfyod_cpus = 0"), "fyod_cpus"),
        (fyod("fyod_cpus = 2"), "give fyod_call_us too"),
        (
            fyod("fyod_call_us = 100\nfyod_memory = \"64m\""),
            "give fyod_thread_memory too",
        ),
        (
            fyod("fyod_call_us = 100\nfyod_thread_memory = \"1m\""),
            "give fyod_memory too",
        ),
        (
            fyod("fyod_call_us = 100\nfyod_memory = -5\nfyod_thread_memory = \"1m\""),
            "fyod_memory",
        ),
        (
            fyod("fyod_call_us = 100\nfyod_memory = \"1m\"\nfyod_thread_memory = \"2m\""),
            "not one thread fits",
        ),
        (
            with(
                "[[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = { net0 = 2 }\nfyod_call_us = 5\n",
            ),
            "applies to fyod nodes only",
        ),
    ];
    for (text, needle) in cases {
        let error = refused(&text);
        assert!(
            error.contains(needle),
            "{error:?} should say {needle:?}\n{text}"
        );
    }
    // A service node alone is something for the time scale to scale.
    let text = format!(
        "{}\n[model]\ntime_scale = 4\n",
        fyod(
            "fyod_call_us = 2500\nfyod_cpus = 2\nfyod_memory = \"64m\"\nfyod_thread_memory = \"1m\""
        )
    );
    let stack = Stack::parse(&text, "fyods.toml").unwrap();
    assert!(stack.is_modeled());
    let fyods = stack.nodes_of(RoleName::Fyod);
    for &i in &fyods {
        // As the fyod runs it: 2.5 ms at time scale 4, 64 threads of 1 MiB in 64 MiB.
        let node = stack.fyod_service(i).unwrap();
        assert_eq!(node.call, std::time::Duration::from_millis(10));
        assert_eq!((node.cpus, node.threads_fit), (2, Some(64)));
    }
    let said = stack.modeled();
    assert!(
        said.contains("fyod0, fyod1 (2500 us a call on 2 CPUs, 64 MiB for threads of 1024 KiB each (paging past 64 open files))"),
        "{said}"
    );
    let again = Stack::parse(&stack.to_toml(), "again.toml").unwrap();
    assert_eq!(again.nodes, stack.nodes);
}

#[test]
fn a_stack_of_the_most_nodes_is_accepted() {
    use iopath_stack::schema::NODES_MAX;
    let oss = "[[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = { net0 = 2 }\n";
    let clients = NODES_MAX - 2;
    let text = with(&format!(
        "{oss}[[nodes]]\nname = \"c\"\nrole = \"client\"\ncount = {clients}\nnids = {{ net0 = 100 }}"
    ));
    let stack = Stack::parse(&text, "test.toml").unwrap();
    assert_eq!(stack.nodes.len(), NODES_MAX);
    // One node past it is refused, naming the entry that went past: by its count where it
    // has one, by itself where it has none (it has no `count` to blame).
    let over = with(&format!(
        "{oss}[[nodes]]\nname = \"c\"\nrole = \"client\"\ncount = {}\nnids = {{ net0 = 100 }}",
        clients + 1
    ));
    let error = refused(&over);
    assert!(
        error.contains("nodes[2] (c).count") && error.contains("more than 20000 nodes"),
        "{error}"
    );
    let last_one =
        format!("{text}\n[[nodes]]\nname = \"late\"\nrole = \"client\"\nnids = {{ net0 = 99 }}");
    let error = refused(&last_one);
    assert!(
        error.contains("nodes[3] (late)") && !error.contains("late).count"),
        "{error}"
    );
}

/// `--stack /dev/zero` read 2.1 GB before it failed with ENOMEM: a stack file (or hostfile)
/// larger than any a person or `up` writes is refused after a bounded read, naming the file.
#[test]
fn a_file_too_large_to_be_a_stack_file_is_refused_after_a_bounded_read() {
    let error = Stack::load(std::path::Path::new("/dev/zero")).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("/dev/zero") && text.contains("larger than 64 MiB"),
        "{text}"
    );
    let hosts = iopath_stack::cluster::Hosts::from_hostfile(std::path::Path::new("/dev/zero"));
    assert!(
        hosts.is_err_and(|e| e.to_string().contains("larger than")),
        "the hostfile too"
    );
}
