//! Can every node reach the nodes it must talk to, and can they answer? A pure check over a
//! [`Stack`], done once when it is read, so that a missing route is a sentence about the stack
//! file rather than a timeout in the middle of a run.
//!
//! Who talks to whom: a client to the metadata service, to every storage server (and they to
//! it: in PFS mode they pull the client's buffers themselves) and to its fyod (and the fyod to
//! it); a fyod to the metadata service and every storage server. A node addresses a peer by
//! its primary NID (its first interface); the peer answers the interface the request left
//! from, so both directions are checked.

use super::file::RoleName;
use super::stack::{Role, Stack};

type FieldError = (String, String);

/// Checks every conversation the stack's roles need.
pub(crate) fn check(stack: &Stack) -> Result<(), FieldError> {
    let mds = stack.nodes_of(RoleName::Mds);
    let osss = stack.nodes_of(RoleName::Oss);
    for c in stack.nodes_of(RoleName::Client) {
        for &m in &mds {
            talk(stack, c, m)?;
        }
        for &o in &osss {
            talk(stack, c, o)?;
            talk(stack, o, c)?;
        }
        if let Role::Client(spec) = stack.nodes[c].role
            && let Some(f) = spec.forwarder
        {
            talk(stack, c, f)?;
            talk(stack, f, c)?;
        }
    }
    for f in stack.nodes_of(RoleName::Fyod) {
        for &m in &mds {
            talk(stack, f, m)?;
        }
        for &o in &osss {
            talk(stack, f, o)?;
        }
    }
    Ok(())
}

/// `a` sends to `b`'s primary NID, and `b` answers on whichever network the request came from.
fn talk(stack: &Stack, a: usize, b: usize) -> Result<(), FieldError> {
    let target = stack.nodes[b].interfaces[0].network;
    let field = format!("nodes ({})", stack.nodes[a].name);
    let vias = reachable(stack, a, target, 0).map_err(|why| {
        (
            field.clone(),
            format!(
                "cannot reach {} ({}): {why}",
                stack.nodes[b].name,
                stack.primary_nid(b)
            ),
        )
    })?;
    for via in vias {
        reachable(stack, b, via, 0).map_err(|why| {
            (
                format!("nodes ({})", stack.nodes[b].name),
                format!(
                    "cannot answer {} on {}: {why}",
                    stack.nodes[a].name, stack.networks[via].name
                ),
            )
        })?;
    }
    Ok(())
}

/// The networks `node` sends on to reach `network`: the network itself when the node is on
/// it, else the networks of its gateways there (each of which must reach it in turn).
fn reachable(
    stack: &Stack,
    node: usize,
    network: usize,
    depth: usize,
) -> Result<Vec<usize>, String> {
    if stack.interface_on(node, network).is_some() {
        return Ok(vec![network]);
    }
    // A route through routers cannot be longer than the number of nodes.
    if depth > stack.nodes.len() {
        return Err(format!(
            "the routes to {} go round in a circle",
            stack.networks[network].name
        ));
    }
    let rules: Vec<_> = stack
        .routes
        .iter()
        .filter(|r| r.node == node && r.net == network)
        .collect();
    if rules.is_empty() {
        return Err(format!(
            "{} is not on {} and has no route to it (add a [[routes]] entry)",
            stack.nodes[node].name, stack.networks[network].name
        ));
    }
    let mut vias = Vec::new();
    for rule in rules {
        reachable(stack, rule.gateway, network, depth + 1)
            .map_err(|why| format!("through router {}: {why}", stack.nodes[rule.gateway].name))?;
        if !vias.contains(&rule.via) {
            vias.push(rule.via);
        }
    }
    Ok(vias)
}
