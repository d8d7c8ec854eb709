//! The vocabulary of findings: [`Kind`], Valgrind's `<kind>` (and the kinds
//! leakgate adds), as one typed enum. Each kind's string is written here
//! once; JSON, policies, renderers and suppressions read it through
//! [`Kind::as_str`] and [`Kind::parse`]. Kinds this leakgate does not know
//! (a newer Valgrind's) stay as [`Kind::Other`] with their string, and count
//! as memory errors.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// A finding's kind: Valgrind's `<kind>` string, typed.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub enum Kind {
            $($(#[$doc])* $variant,)*
            /// A kind this leakgate does not know (kept verbatim); a memory
            /// error as far as the policy goes.
            Other(Box<str>),
            /// No kind (only for `Default`; never in a report).
            #[default]
            Unknown,
        }

        impl Kind {
            /// Every kind leakgate knows, in declaration order.
            pub const KNOWN: &'static [Kind] = &[$(Kind::$variant,)*];

            /// The kind's string, as Valgrind writes it.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Kind::$variant => $name,)*
                    Kind::Other(s) => s,
                    Kind::Unknown => "",
                }
            }

            /// The kind for a string; unknown strings give [`Kind::Other`].
            pub fn parse(s: &str) -> Kind {
                match s {
                    $($name => Kind::$variant,)*
                    "" => Kind::Unknown,
                    other => Kind::Other(other.into()),
                }
            }
        }
    };
}

kinds! {
    DefinitelyLost => "Leak_DefinitelyLost",
    IndirectlyLost => "Leak_IndirectlyLost",
    PossiblyLost => "Leak_PossiblyLost",
    StillReachable => "Leak_StillReachable",
    InvalidFree => "InvalidFree",
    MismatchedFree => "MismatchedFree",
    InvalidRead => "InvalidRead",
    InvalidWrite => "InvalidWrite",
    InvalidJump => "InvalidJump",
    Overlap => "Overlap",
    InvalidMemPool => "InvalidMemPool",
    UninitCondition => "UninitCondition",
    UninitValue => "UninitValue",
    SyscallParam => "SyscallParam",
    ClientCheck => "ClientCheck",
    FishyValue => "FishyValue",
    ReallocSizeZero => "ReallocSizeZero",
    InvalidAlignment => "InvalidAlignment",
    InvalidSizeAndAlignment => "InvalidSizeAndAlignment",
    InvalidSize => "InvalidSize",
    MismatchedAllocateDeallocateSize => "MismatchedAllocateDeallocateSize",
    MismatchedAllocateDeallocateAlignment => "MismatchedAllocateDeallocateAlignment",
    InvalidFreeSized => "InvalidFreeSized",
    /// leakgate's: the process died of a signal (Valgrind's `<fatal_signal>`).
    FatalSignal => "FatalSignal",
    /// `--track-fds` (Valgrind 3.23+): a descriptor still open at exit.
    FdNotClosed => "FdNotClosed",
    /// `--track-fds`: close() of a descriptor that is not open.
    FdBadClose => "FdBadClose",
    /// `--track-fds`: use of a descriptor that is not open.
    FdBadUse => "FdBadUse",
    /// leakgate's: PyTorch warned that a CUDA-IPC producer exited while
    /// consumers held its tensors ([`CUDA_IPC_TEXT`]).
    CudaIpcProducerExited => "CudaIpcProducerExited",
}

/// Memcheck's leak kinds, in severity order.
pub const LEAK_KINDS: [Kind; 4] = [
    Kind::DefinitelyLost,
    Kind::IndirectlyLost,
    Kind::PossiblyLost,
    Kind::StillReachable,
];

/// The descriptor kinds of `--track-fds` (Valgrind 3.23+): the `fds` group.
pub const FD_KINDS: [Kind; 3] = [Kind::FdNotClosed, Kind::FdBadClose, Kind::FdBadUse];

/// Whether `kind` (a `<kind>` or suppression kind string) is one of
/// [`FD_KINDS`].
pub fn is_fd_kind(kind: &str) -> bool {
    FD_KINDS.iter().any(|k| k.as_str() == kind)
}

/// What PyTorch prints when a CUDA-IPC producer exits too early (the run's
/// standard error is searched for it).
pub const CUDA_IPC_TEXT: &str =
    "Producer process has been terminated before all shared CUDA tensors released";

/// How to fix a [`Kind::CudaIpcProducerExited`] finding.
pub const CUDA_IPC_ADVICE: &str = "a process that shared CUDA tensors with other processes exited while they still held them, so the memory could not be released properly. Keep the producer alive until the consumers are done (join the consumer processes or DataLoader workers before the producer exits); in consumers, release received tensors as soon as possible (`del t`, then `torch.cuda.ipc_collect()`); or send CPU tensors instead of CUDA tensors (see PyTorch's Note [Sharing CUDA tensors])";

impl Kind {
    /// A leak kind (`Leak_*`).
    pub fn is_leak(&self) -> bool {
        match self {
            Kind::Other(s) => s.starts_with("Leak_"),
            k => LEAK_KINDS.contains(k),
        }
    }

    /// A definitely or indirectly lost leak: what a leak check is about.
    pub fn is_lost(&self) -> bool {
        matches!(self, Kind::DefinitelyLost | Kind::IndirectlyLost)
    }

    /// [`Kind::is_lost`] of a `<kind>` string, without parsing it (the
    /// aggregator asks for every record).
    pub fn is_lost_str(kind: &str) -> bool {
        kind == Kind::DefinitelyLost.as_str() || kind == Kind::IndirectlyLost.as_str()
    }

    /// A `--track-fds` descriptor kind.
    pub fn is_fd(&self) -> bool {
        FD_KINDS.contains(self)
    }

    /// A memory error: not a leak, not a descriptor kind, not the CUDA-IPC
    /// warning (unknown kinds count as memory errors).
    pub fn is_memory_error(&self) -> bool {
        !self.is_leak() && !self.is_fd() && *self != Kind::CudaIpcProducerExited
    }

    /// Whether a user finding of this kind fails the gate under the default
    /// `--fail-on` (definitely and indirectly lost leaks, every error kind).
    pub fn gated_by_default(&self) -> bool {
        !matches!(
            self,
            Kind::PossiblyLost | Kind::StillReachable | Kind::CudaIpcProducerExited
        )
    }

    /// Report order: crashes, errors, then leaks by severity.
    pub fn severity(&self) -> u8 {
        match self {
            Kind::FatalSignal => 0,
            Kind::DefinitelyLost => 2,
            Kind::IndirectlyLost => 3,
            Kind::PossiblyLost => 4,
            Kind::StillReachable => 5,
            _ => 1,
        }
    }

    /// A person's name for the kind, singular and plural.
    pub fn noun(&self) -> (String, String) {
        let (one, many) = match self {
            Kind::DefinitelyLost => ("definitely-lost leak", "definitely-lost leaks"),
            Kind::IndirectlyLost => ("indirectly-lost leak", "indirectly-lost leaks"),
            Kind::PossiblyLost => ("possibly-lost leak", "possibly-lost leaks"),
            Kind::StillReachable => ("still-reachable block", "still-reachable blocks"),
            Kind::FatalSignal => ("crash", "crashes"),
            Kind::CudaIpcProducerExited => {
                ("CUDA-IPC producer warning", "CUDA-IPC producer warnings")
            }
            k => return (format!("{k} error"), format!("{k} errors")),
        };
        (one.into(), many.into())
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for Kind {
    fn from(s: &str) -> Kind {
        Kind::parse(s)
    }
}

impl PartialEq<str> for Kind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl Serialize for Kind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Kind::parse(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_kind_round_trips_through_its_string() {
        for k in Kind::KNOWN {
            assert_eq!(&Kind::parse(k.as_str()), k);
        }
        assert_eq!(Kind::parse("FdFuture"), Kind::Other("FdFuture".into()));
        assert!(Kind::parse("FdFuture").is_memory_error());
    }

    #[test]
    fn json_is_the_kind_string() {
        let j = serde_json::to_string(&Kind::DefinitelyLost).unwrap();
        assert_eq!(j, "\"Leak_DefinitelyLost\"");
        let k: Kind = serde_json::from_str("\"NewKind\"").unwrap();
        assert_eq!(k.as_str(), "NewKind");
    }
}
