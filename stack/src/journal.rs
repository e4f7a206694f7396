//! What the storage targets' journals did: commits and `last_committed` per target, read from
//! the targets themselves (embedded) or from each storage server's admin service
//! (`obdfilter.iopath-OSTnnnn.last_committed` and `commits`, with node processes and on a
//! launched stack).

use std::net::SocketAddr;

use serde::Serialize;

use crate::error::StackError;
use crate::runtime::RunningStack;
use crate::schema::RoleName;

/// One target's journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetJournal {
    /// `iopath-OST0002`: the target's name, after its file system.
    pub target: String,
    /// The storage server holding it.
    pub oss: String,
    /// Journal commits so far.
    pub commits: u64,
    /// The highest committed transaction number.
    pub last_committed: u64,
}

/// Every target's journal, in target order.
pub async fn targets(running: &RunningStack) -> Result<Vec<TargetJournal>, StackError> {
    let stack = running.stack();
    let targets = stack.targets();
    let mut out = Vec::new();
    match running {
        RunningStack::Embedded(embedded) => {
            for (global, &(oss, _)) in targets.iter().enumerate() {
                let Some(node) = embedded.node(oss) else {
                    continue;
                };
                let Some(server) = node.oss() else {
                    continue;
                };
                let stats = server
                    .target(global as u32)
                    .map_err(|e| StackError::io(format!("find {}", stack.target_name(global)), e))?
                    .stats();
                out.push(TargetJournal {
                    target: stack.target_name(global).to_string(),
                    oss: node.name.clone(),
                    commits: stats.journal.commits,
                    last_committed: stats.last_committed.0,
                });
            }
        }
        // Node processes and launched nodes alike: over their admin services.
        RunningStack::Processes { .. } | RunningStack::Attached { .. } => {
            let osss: Vec<(usize, SocketAddr)> = stack
                .nodes_of(RoleName::Oss)
                .into_iter()
                .filter_map(|i| Some((i, running.admin_addr(i)?)))
                .collect();
            out = over_admin(stack, &osss).await?;
        }
    }
    Ok(out)
}

/// Parameter `name`'s `value` as a count: a figure that is missing or does not parse is an
/// error, never a zero.
fn number(name: &str, value: &str) -> Result<u64, StackError> {
    value
        .trim()
        .parse()
        .map_err(|_| StackError::io(format!("get {name}"), format!("not a number: {value:?}")))
}

/// The journals of the storage servers `osss` (node index, admin address), asked over their
/// admin services.
async fn over_admin(
    stack: &crate::schema::Stack,
    osss: &[(usize, SocketAddr)],
) -> Result<Vec<TargetJournal>, StackError> {
    let targets = stack.targets();
    let mut out = Vec::new();
    for &(index, admin_addr) in osss {
        let name = &stack.nodes[index].name;
        let admin = iopath_admin::Client::connect(admin_addr)
            .await
            .map_err(|e| StackError::io(format!("ask {name} for its journals"), e))?;
        for (global, &(oss, _)) in targets.iter().enumerate() {
            if oss != index {
                continue;
            }
            let param = |leaf: &str| format!("obdfilter.{}.{leaf}", stack.target_name(global));
            let get = |name: String| {
                let admin = &admin;
                async move {
                    admin
                        .get_param(&name)
                        .await
                        .map_err(|e| StackError::io(format!("get {name}"), e))
                        .map(|v| v.into_iter().next().map(|p| p.value).unwrap_or_default())
                }
            };
            let (last, commits) = (param("last_committed"), param("commits"));
            let last_committed = number(&last, &get(last.clone()).await?)?;
            let commits = number(&commits, &get(commits.clone()).await?)?;
            out.push(TargetJournal {
                target: stack.target_name(global).to_string(),
                oss: name.clone(),
                commits,
                last_committed,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_count_that_is_missing_or_not_a_number_is_an_error() {
        assert_eq!(super::number("x.commits", "12\n").unwrap(), 12);
        assert!(super::number("x.commits", "").is_err());
        assert!(super::number("x.commits", "OstStats {").is_err());
    }
}
