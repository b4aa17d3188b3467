//! The protocol revisions, in one place. A revision is named by its date; what really differs
//! between revisions is a method here, so code elsewhere asks "does this revision keep
//! sessions?" rather than "is this the old one?". Adding a revision means a variant here and
//! the places ARCHITECTURE.md lists under "Adding a revision".

use rmcp::model::ProtocolVersion;

/// A protocol revision this library speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Revision {
    /// 2025-11-25: `initialize` and a session; the server sends its own requests (elicitation,
    /// sampling, roots) to the client while a call runs.
    V2025_11_25,
    /// 2026-07-28: stateless, capabilities per request; questions go back as `input_required`
    /// results and the client retries with the answers.
    V2026_07_28,
}

/// Put into a request's HTTP extensions by the HTTP edge when a `tools/call` carries a `task`
/// field: on a revision with sessions a task is the requester's choice, and this is it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskAsked;

/// Why a revision name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol revision {0:?}; known: 2025-11-25, 2026-07-28")]
pub struct UnknownRevision(pub String);

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 2] = [Revision::V2025_11_25, Revision::V2026_07_28];

    /// The newest revision.
    pub const LATEST: Revision = Revision::V2026_07_28;

    /// The revision's date, as the protocol writes it.
    pub const fn date(self) -> &'static str {
        match self {
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// rmcp's name for it.
    pub fn protocol_version(self) -> ProtocolVersion {
        match self {
            Revision::V2025_11_25 => ProtocolVersion::V_2025_11_25,
            Revision::V2026_07_28 => ProtocolVersion::V_2026_07_28,
        }
    }

    /// The revision a negotiated protocol version belongs to: every version before
    /// 2026-07-28 behaves as 2025-11-25 here (sessions, server-to-client requests).
    pub fn of(version: &ProtocolVersion) -> Revision {
        Revision::of_date(version.as_str())
    }

    /// [`Revision::of`] for a version as written (an `MCP-Protocol-Version` header's value).
    pub fn of_date(version: &str) -> Revision {
        if version.trim() >= Revision::V2026_07_28.date() {
            Revision::V2026_07_28
        } else {
            Revision::V2025_11_25
        }
    }

    /// Whether a client opens a session (`initialize`) and the server may send it requests
    /// while a call runs. Otherwise questions travel as `input_required` results.
    pub const fn has_sessions(self) -> bool {
        matches!(self, Revision::V2025_11_25)
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.date())
    }
}

impl std::str::FromStr for Revision {
    type Err = UnknownRevision;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Revision::ALL
            .into_iter()
            .find(|r| r.date() == text.trim())
            .ok_or_else(|| UnknownRevision(text.to_owned()))
    }
}

impl<'de> serde::Deserialize<'de> for Revision {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for Revision {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.date())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_are_named_by_their_dates() {
        for revision in Revision::ALL {
            assert_eq!(revision.date().parse::<Revision>(), Ok(revision));
            assert_eq!(Revision::of(&revision.protocol_version()), revision);
        }
        assert_eq!(
            Revision::of(&ProtocolVersion::V_2025_03_26),
            Revision::V2025_11_25
        );
        assert!("2024-01-01".parse::<Revision>().is_err());
        assert!(Revision::V2025_11_25.has_sessions() && !Revision::V2026_07_28.has_sessions());
    }
}
