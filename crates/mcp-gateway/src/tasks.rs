//! An upstream's tasks (tasks extension), relayed: when an upstream makes a call a task, the
//! downstream client gets the task under an id of the gateway's, and `tasks/get`,
//! `tasks/update` and `tasks/cancel` on that id go to the upstream task.
//!
//! The gateway keeps no table of tasks. Its task id is sealed ([`backchannel::Sealer`]:
//! encrypted and signed) over the route to the upstream task: the upstream, the set of client
//! capabilities whose upstream session made it, and the upstream's id; the seal is bound to
//! the downstream owner (its principal, else its 2025-11-25 session, as the layer binds its
//! own tasks), so another caller's id, or one made up, is an unknown task, and a client reads
//! nothing of the route from it.
//!
//! Questions inside a task are the task's `input_required` status, with the upstream's keys:
//! the client answers them with `tasks/update`, which goes upstream as it is (the upstream
//! takes only the keys it asked).

use backchannel_host::{Declared, HostError};
use rmcp::ErrorData;
use rmcp::model::Task;
use serde::{Deserialize, Serialize};

/// The longest task id opened; a longer one is unknown without further work.
const MAX_TASK_ID: usize = 4096;

/// Where a downstream task id leads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskRoute {
    /// The upstream connection.
    #[serde(rename = "c")]
    pub(crate) connection: String,
    /// The client capabilities the upstream session that made the task declares.
    #[serde(rename = "d")]
    pub(crate) declared: Declared,
    /// The upstream's task id.
    #[serde(rename = "t")]
    pub(crate) upstream: String,
    /// The gateway instance whose upstream session made the task, when the task lives in that
    /// session (a 2025-11-25 upstream) and instances pass requests to each other (see `hop`).
    #[serde(rename = "i", default, skip_serializing_if = "Option::is_none")]
    pub(crate) instance: Option<String>,
}

/// Seals task routes into downstream task ids and opens them again.
pub(crate) struct TaskIds {
    sealer: backchannel::Sealer,
}

impl std::fmt::Debug for TaskIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskIds(..)")
    }
}

impl TaskIds {
    /// Task ids under a key of this process's own (they are valid while it runs, as the
    /// upstream sessions that made the tasks are).
    pub(crate) fn new() -> Result<TaskIds, backchannel::SealError> {
        Ok(TaskIds {
            sealer: backchannel::Sealer::random()?,
        })
    }

    /// Task ids under the key ring `keys` (`--state-keys`): every instance given the same
    /// ring opens the ids the others made, and they survive a restart (as an upstream task of
    /// a 2026-07-28 upstream does).
    pub(crate) fn with_keys(
        keys: &backchannel::StateKeys,
    ) -> Result<TaskIds, backchannel::SealError> {
        Ok(TaskIds {
            sealer: backchannel::Sealer::with_keys(keys)?,
        })
    }

    /// The downstream id of the upstream task `route` leads to, for `owner`.
    pub(crate) fn seal(&self, owner: &str, route: &TaskRoute) -> String {
        let json = serde_json::to_vec(route).unwrap_or_default();
        self.sealer.seal(&json, owner.as_bytes())
    }

    /// Where `id` leads, when `owner` is the one it was sealed for; else the error of an
    /// unknown task.
    pub(crate) fn open(&self, owner: &str, id: &str) -> Result<TaskRoute, ErrorData> {
        if id.len() > MAX_TASK_ID {
            return Err(unknown_task(id));
        }
        self.sealer
            .open(id, owner.as_bytes())
            .and_then(|json| serde_json::from_slice(&json).ok())
            .ok_or_else(|| unknown_task(id))
    }

    /// The upstream's `task` as the downstream client sees it: the same, under its own id.
    pub(crate) fn shown(&self, owner: &str, route: &TaskRoute, mut task: Task) -> Task {
        task.task_id = self.seal(owner, route);
        task
    }
}

fn unknown_task(id: &str) -> ErrorData {
    let shown: String = id.chars().take(64).collect();
    ErrorData::invalid_params(format!("unknown task: {shown}"), None)
}

/// An upstream's failure on a task request as the downstream client reads it: the upstream's
/// own JSON-RPC error (an unknown task stays -32602), else an internal error naming it.
pub(crate) fn task_error(route: &TaskRoute, error: HostError) -> ErrorData {
    match error {
        HostError::Refused { error, .. } => error,
        other => {
            tracing::warn!(upstream = %route.connection, error = %other, "an upstream task request failed");
            ErrorData::internal_error(
                format!(
                    "the upstream server {:?} could not be asked about the task: {other}",
                    route.connection
                ),
                None,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route() -> TaskRoute {
        TaskRoute {
            connection: "orders".into(),
            declared: Declared::default(),
            upstream: "abc123".into(),
            instance: None,
        }
    }

    #[test]
    fn a_task_id_opens_for_its_owner_only() {
        let ids = TaskIds::new().unwrap();
        let id = ids.seal("principal:alice", &route());
        assert_eq!(ids.open("principal:alice", &id).unwrap(), route());
        let error = ids.open("principal:mallory", &id).unwrap_err();
        assert!(error.message.contains("unknown task"), "{error:?}");
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn instances_with_one_key_ring_open_each_other_s_task_ids() {
        let keys = backchannel::StateKeys::new("k1", vec![7u8; 32]).unwrap();
        let (one, another) = (
            TaskIds::with_keys(&keys).unwrap(),
            TaskIds::with_keys(&keys).unwrap(),
        );
        let id = one.seal("principal:alice", &route());
        assert_eq!(another.open("principal:alice", &id).unwrap(), route());
        assert!(another.open("principal:mallory", &id).is_err());
        assert!(
            TaskIds::new()
                .unwrap()
                .open("principal:alice", &id)
                .is_err()
        );
    }

    #[test]
    fn a_forged_or_foreign_task_id_is_unknown() {
        let ids = TaskIds::new().unwrap();
        let other = TaskIds::new().unwrap();
        let id = other.seal("", &route());
        assert!(ids.open("", &id).is_err(), "another key's id opened");
        assert!(ids.open("", "abc123").is_err(), "an upstream id opened");
        let mut tampered = ids.seal("", &route());
        tampered.insert(3, 'x');
        assert!(ids.open("", &tampered).is_err(), "a tampered id opened");
        assert!(ids.open("", &"a".repeat(MAX_TASK_ID + 1)).is_err());
    }

    #[test]
    fn a_task_id_reveals_nothing_of_its_route() {
        let ids = TaskIds::new().unwrap();
        let id = ids.seal("principal:alice", &route());
        let decoded: Vec<u8> = id
            .split('.')
            .flat_map(|part| {
                base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, part)
                    .unwrap_or_default()
            })
            .collect();
        let text = String::from_utf8_lossy(&decoded);
        assert!(
            !text.contains("orders") && !text.contains("abc123"),
            "{text}"
        );
    }
}
