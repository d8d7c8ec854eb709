//! The element names of Valgrind's XML the reader knows, as a [`Tag`]
//! per name, and which of them carry text the reader keeps.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Tag {
    Root,
    ProtocolVersion,
    ProtocolTool,
    Preamble,
    Line,
    Pid,
    Ppid,
    Args,
    Vargv,
    Argv,
    Exe,
    Arg,
    Status,
    State,
    Error,
    Unique,
    Tid,
    Kind,
    Fd,
    FdPath,
    What,
    Xwhat,
    Text,
    LeakedBytes,
    LeakedBlocks,
    Stack,
    Frame,
    Ip,
    Obj,
    Fn,
    Dir,
    File,
    AuxWhat,
    XauxWhat,
    Suppression,
    Skind,
    Skaux,
    Sframe,
    Fun,
    ClientMsg,
    FatalSignal,
    Signame,
    ErrorCounts,
    SuppCounts,
    Pair,
    Count,
    Name,
    /// Protocol 6 `<leak_summary>` and its `<still_reachable>` (see
    /// [`closes_unclosed_still_reachable`]).
    LeakSummary,
    StillReachable,
    Other,
}

pub(super) fn tag_of(name: &[u8]) -> Tag {
    match name {
        b"valgrindoutput" => Tag::Root,
        b"protocolversion" => Tag::ProtocolVersion,
        b"protocoltool" => Tag::ProtocolTool,
        b"preamble" => Tag::Preamble,
        b"line" => Tag::Line,
        b"pid" => Tag::Pid,
        b"ppid" => Tag::Ppid,
        b"args" => Tag::Args,
        b"vargv" => Tag::Vargv,
        b"argv" => Tag::Argv,
        b"exe" => Tag::Exe,
        b"arg" => Tag::Arg,
        b"status" => Tag::Status,
        b"state" => Tag::State,
        b"error" => Tag::Error,
        b"unique" => Tag::Unique,
        b"tid" => Tag::Tid,
        b"kind" => Tag::Kind,
        b"fd" => Tag::Fd,
        b"path" => Tag::FdPath,
        b"what" => Tag::What,
        b"xwhat" => Tag::Xwhat,
        b"text" => Tag::Text,
        b"leakedbytes" => Tag::LeakedBytes,
        b"leakedblocks" => Tag::LeakedBlocks,
        b"stack" => Tag::Stack,
        b"frame" => Tag::Frame,
        b"ip" => Tag::Ip,
        b"obj" => Tag::Obj,
        b"fn" => Tag::Fn,
        b"dir" => Tag::Dir,
        b"file" => Tag::File,
        b"auxwhat" => Tag::AuxWhat,
        b"xauxwhat" => Tag::XauxWhat,
        b"suppression" => Tag::Suppression,
        b"skind" => Tag::Skind,
        b"skaux" => Tag::Skaux,
        b"sframe" => Tag::Sframe,
        b"fun" => Tag::Fun,
        b"clientmsg" => Tag::ClientMsg,
        b"fatal_signal" => Tag::FatalSignal,
        b"signame" => Tag::Signame,
        b"errorcounts" => Tag::ErrorCounts,
        b"suppcounts" => Tag::SuppCounts,
        b"pair" => Tag::Pair,
        b"count" => Tag::Count,
        b"name" => Tag::Name,
        b"leak_summary" => Tag::LeakSummary,
        b"still_reachable" => Tag::StillReachable,
        _ => Tag::Other,
    }
}

/// Leaf elements whose text the parser uses; the text of all others (the
/// `<rawtext>` of generated suppressions, `<sname>`, ...) is not collected.
pub(super) fn wants_text(tag: Tag) -> bool {
    !matches!(
        tag,
        Tag::Root
            | Tag::Preamble
            | Tag::Args
            | Tag::Vargv
            | Tag::Argv
            | Tag::Status
            | Tag::Error
            | Tag::Xwhat
            | Tag::Stack
            | Tag::Frame
            | Tag::XauxWhat
            | Tag::Suppression
            | Tag::Sframe
            | Tag::ClientMsg
            | Tag::FatalSignal
            | Tag::ErrorCounts
            | Tag::SuppCounts
            | Tag::Pair
            | Tag::LeakSummary
            | Tag::StillReachable
            | Tag::Other
    )
}
