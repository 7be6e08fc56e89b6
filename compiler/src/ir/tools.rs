//! The closed set of tools an agent can call, the plugins that offer them and the capability
//! tags that grant them: the one authority on what a called name means. The VM resolves a
//! call's name once with [`Tool::resolve`] and that value decides both permission and
//! execution; `check` asks the same questions (can this agent produce a validator's evidence?).

use std::fmt;

pub use super::capability::Capability;
use super::policy::Category;

/// A plugin of an agent's `Plugins` that offers tools (compared case-insensitively).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Plugin {
    FileSystem,
    Shell,
    Changes,
    Handoff,
    Finish,
    // Git.
    Git,
    // Search and FileSystem in full (issue 15).
    Search,
    // Agent state and context (issue 15).
    SessionContext,
    Scratchpad,
    Chatroom,
    Json,
    // Http (issue 15).
    Http,
    // SubAgent (issue 15).
    SubAgent,
    /// Text out of PDF, DOCX, PPTX and XLSX files.
    Document,
    /// Memories kept across sessions, per agent and project.
    Memory,
    // Probe (issue 29).
    Probe,
    /// Code snippets and REPL sessions, run in the command sandbox.
    CodeExecution,
    /// tama's runtime tools (`tama_bash`, `tama_files_write`, …) and `read_skill`, unlocked
    /// one by one by the skills an agent uses.
    Tama,
}

impl Plugin {
    pub const ALL: &'static [Plugin] = &[
        Plugin::FileSystem,
        Plugin::Shell,
        Plugin::Changes,
        Plugin::Handoff,
        Plugin::Finish,
        // Git.
        Plugin::Git,
        // Search and FileSystem in full (issue 15).
        Plugin::Search,
        // Agent state and context (issue 15).
        Plugin::SessionContext,
        Plugin::Scratchpad,
        Plugin::Chatroom,
        Plugin::Json,
        // Http (issue 15).
        Plugin::Http,
        // SubAgent (issue 15).
        Plugin::SubAgent,
        Plugin::Document,
        Plugin::Memory,
        // Probe (issue 29).
        Plugin::Probe,
        Plugin::CodeExecution,
        Plugin::Tama,
    ];

    /// The spelling used in configs and the IR.
    pub fn as_str(self) -> &'static str {
        match self {
            Plugin::FileSystem => "FileSystem",
            Plugin::Shell => "Shell",
            Plugin::Changes => "Changes",
            Plugin::Handoff => "Handoff",
            Plugin::Finish => "Finish",
            // Git.
            Plugin::Git => "Git",
            // Search and FileSystem in full (issue 15).
            Plugin::Search => "Search",
            // Agent state and context (issue 15).
            Plugin::SessionContext => "SessionContext",
            Plugin::Scratchpad => "Scratchpad",
            Plugin::Chatroom => "Chatroom",
            Plugin::Json => "Json",
            // Http (issue 15).
            Plugin::Http => "Http",
            // SubAgent (issue 15).
            Plugin::SubAgent => "SubAgent",
            Plugin::Document => "Document",
            Plugin::Memory => "Memory",
            // Probe (issue 29).
            Plugin::Probe => "Probe",
            Plugin::CodeExecution => "CodeExecution",
            Plugin::Tama => "Tama",
        }
    }

    /// The plugin named `text` (ASCII case-insensitive, surrounding blanks ignored).
    pub fn parse(text: &str) -> Option<Plugin> {
        let text = text.trim();
        Plugin::ALL
            .iter()
            .copied()
            .find(|plugin| plugin.as_str().eq_ignore_ascii_case(text))
    }

    /// The tools this plugin offers.
    pub fn tools(self) -> impl Iterator<Item = Tool> {
        Tool::ALL
            .iter()
            .copied()
            .filter(move |tool| tool.plugin() == self)
    }

    /// The capability tags that grant something in this plugin, each once.
    pub fn capabilities(self) -> Vec<Capability> {
        let mut tags: Vec<Capability> = Vec::new();
        for tool in self.tools() {
            if !tags.contains(&tool.capability()) {
                tags.push(tool.capability());
            }
        }
        tags
    }
}

impl fmt::Display for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The tools, by the function names models call.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    ReadFile,
    ListFiles,
    WriteFile,
    PatchFile,
    DeleteFile,
    ShellRun,
    ChangesReadLatest,
    Handoff,
    Finish,
    // Git and the rest of Shell (upstream's names, `PluginCapabilityMap`).
    GitStatus,
    GitDiff,
    GitLog,
    GitShow,
    GitBranchList,
    GitStashList,
    GitAdd,
    GitCommit,
    GitCheckout,
    GitCreateBranch,
    GitInit,
    GitStash,
    GitStashPop,
    GitReset,
    GitPush,
    GitPull,
    ShellRunScript,
    ShellRunBackground,
    ShellGetJobStatus,
    ShellGetJobOutput,
    ShellKillJob,
    ShellGetEnv,
    ShellWhich,
    // Search and FileSystem in full (issue 15): upstream's names.
    GrepFile,
    GetFileInfo,
    GetFileSummary,
    ListDirectory,
    CreateDirectory,
    CopyFile,
    MoveFile,
    DeleteDirectory,
    SetPermissions,
    SearchFiles,
    SearchContent,
    SearchSymbol,
    SearchCallers,
    // Agent state and context (issue 15).
    SessionContextRead,
    SessionContextWrite,
    ScratchpadWrite,
    ScratchpadRead,
    ScratchpadReadAll,
    ScratchpadSearch,
    ScratchpadDelete,
    ChatroomSend,
    ChatroomRead,
    ChangesRead,
    JsonFormat,
    JsonMinify,
    JsonGet,
    JsonKeys,
    JsonSearch,
    JsonToText,
    JsonValidate,
    JsonMerge,
    // Http (issue 15): upstream's names.
    HttpGet,
    HttpHead,
    HttpPost,
    HttpPut,
    HttpPatch,
    HttpDelete,
    // SubAgent (issue 15): upstream's names.
    SubAgentExplore,
    SubAgentLocate,
    // Document: upstream's names.
    DocumentExtractText,
    DocumentGetInfo,
    DocumentListSheets,
    DocumentGetSheet,
    // Memory.
    MemoryAppend,
    MemorySearch,
    MemoryGet,
    // The missing FileSystem and Shell tools and Probe (issue 29): upstream's names.
    StatFile,
    PathExists,
    SaveFileSummary,
    ShellSetEnv,
    ShellGetWorkingDirectory,
    ProbeCode,
    ProbeAssertOutput,
    ProbeCompareOutputs,
    ProbeRunHypothesis,
    // CodeExecution: upstream's names.
    CodeExecutionCheckDocker,
    SandboxRun,
    ReplStart,
    ReplExec,
    ReplReset,
    ReplStop,
    // tama's runtime tools, which its skills unlock, and `read_skill`.
    TamaBash,
    TamaHttpGet,
    TamaHttpPost,
    TamaFilesRead,
    TamaFilesWrite,
    TamaMemSet,
    TamaMemGet,
    TamaMemAppend,
    ReadSkill,
}

impl Tool {
    /// In the order models are offered them.
    pub const ALL: &'static [Tool] = &[
        Tool::ReadFile,
        Tool::WriteFile,
        Tool::PatchFile,
        Tool::ListFiles,
        Tool::DeleteFile,
        Tool::ShellRun,
        Tool::ChangesReadLatest,
        Tool::Handoff,
        Tool::Finish,
        // Git and the rest of Shell.
        Tool::GitStatus,
        Tool::GitDiff,
        Tool::GitLog,
        Tool::GitShow,
        Tool::GitBranchList,
        Tool::GitStashList,
        Tool::GitAdd,
        Tool::GitCommit,
        Tool::GitCheckout,
        Tool::GitCreateBranch,
        Tool::GitInit,
        Tool::GitStash,
        Tool::GitStashPop,
        Tool::GitReset,
        Tool::GitPush,
        Tool::GitPull,
        Tool::ShellRunScript,
        Tool::ShellRunBackground,
        Tool::ShellGetJobStatus,
        Tool::ShellGetJobOutput,
        Tool::ShellKillJob,
        Tool::ShellGetEnv,
        Tool::ShellWhich,
        // Search and FileSystem in full (issue 15).
        Tool::GrepFile,
        Tool::GetFileInfo,
        Tool::GetFileSummary,
        Tool::ListDirectory,
        Tool::CreateDirectory,
        Tool::CopyFile,
        Tool::MoveFile,
        Tool::DeleteDirectory,
        Tool::SetPermissions,
        Tool::SearchFiles,
        Tool::SearchContent,
        Tool::SearchSymbol,
        Tool::SearchCallers,
        // Agent state and context (issue 15).
        Tool::SessionContextRead,
        Tool::SessionContextWrite,
        Tool::ScratchpadWrite,
        Tool::ScratchpadRead,
        Tool::ScratchpadReadAll,
        Tool::ScratchpadSearch,
        Tool::ScratchpadDelete,
        Tool::ChatroomSend,
        Tool::ChatroomRead,
        Tool::ChangesRead,
        Tool::JsonFormat,
        Tool::JsonMinify,
        Tool::JsonGet,
        Tool::JsonKeys,
        Tool::JsonSearch,
        Tool::JsonToText,
        Tool::JsonValidate,
        Tool::JsonMerge,
        // Http (issue 15).
        Tool::HttpGet,
        Tool::HttpHead,
        Tool::HttpPost,
        Tool::HttpPut,
        Tool::HttpPatch,
        Tool::HttpDelete,
        // SubAgent (issue 15).
        Tool::SubAgentExplore,
        Tool::SubAgentLocate,
        // Document.
        Tool::DocumentExtractText,
        Tool::DocumentGetInfo,
        Tool::DocumentListSheets,
        Tool::DocumentGetSheet,
        // Memory.
        Tool::MemoryAppend,
        Tool::MemorySearch,
        Tool::MemoryGet,
        // The missing FileSystem and Shell tools and Probe (issue 29).
        Tool::StatFile,
        Tool::PathExists,
        Tool::SaveFileSummary,
        Tool::ShellSetEnv,
        Tool::ShellGetWorkingDirectory,
        Tool::ProbeCode,
        Tool::ProbeAssertOutput,
        Tool::ProbeCompareOutputs,
        Tool::ProbeRunHypothesis,
        // CodeExecution.
        Tool::CodeExecutionCheckDocker,
        Tool::SandboxRun,
        Tool::ReplStart,
        Tool::ReplExec,
        Tool::ReplReset,
        Tool::ReplStop,
        // tama.
        Tool::TamaBash,
        Tool::TamaHttpGet,
        Tool::TamaHttpPost,
        Tool::TamaFilesRead,
        Tool::TamaFilesWrite,
        Tool::TamaMemSet,
        Tool::TamaMemGet,
        Tool::TamaMemAppend,
        Tool::ReadSkill,
    ];

    /// The function name offered to models.
    pub fn name(self) -> &'static str {
        match self {
            Tool::ReadFile => "read_file",
            Tool::ListFiles => "list_files",
            Tool::WriteFile => "write_file",
            Tool::PatchFile => "patch_file",
            Tool::DeleteFile => "delete_file",
            Tool::ShellRun => "shell_run",
            Tool::ChangesReadLatest => "changes_read_latest",
            Tool::Handoff => "handoff",
            Tool::Finish => "finish",
            // Git and the rest of Shell.
            Tool::GitStatus => "git_status",
            Tool::GitDiff => "git_diff",
            Tool::GitLog => "git_log",
            Tool::GitShow => "git_show",
            Tool::GitBranchList => "git_branch_list",
            Tool::GitStashList => "git_stash_list",
            Tool::GitAdd => "git_add",
            Tool::GitCommit => "git_commit",
            Tool::GitCheckout => "git_checkout",
            Tool::GitCreateBranch => "git_create_branch",
            Tool::GitInit => "git_init",
            Tool::GitStash => "git_stash",
            Tool::GitStashPop => "git_stash_pop",
            Tool::GitReset => "git_reset",
            Tool::GitPush => "git_push",
            Tool::GitPull => "git_pull",
            Tool::ShellRunScript => "shell_run_script",
            Tool::ShellRunBackground => "shell_run_background",
            Tool::ShellGetJobStatus => "shell_get_job_status",
            Tool::ShellGetJobOutput => "shell_get_job_output",
            Tool::ShellKillJob => "shell_kill_job",
            Tool::ShellGetEnv => "shell_get_env",
            Tool::ShellWhich => "shell_which",
            // Search and FileSystem in full (issue 15).
            Tool::GrepFile => "grep_file",
            Tool::GetFileInfo => "get_file_info",
            Tool::GetFileSummary => "get_file_summary",
            Tool::ListDirectory => "list_directory",
            Tool::CreateDirectory => "create_directory",
            Tool::CopyFile => "copy_file",
            Tool::MoveFile => "move_file",
            Tool::DeleteDirectory => "delete_directory",
            Tool::SetPermissions => "set_permissions",
            Tool::SearchFiles => "search_files",
            Tool::SearchContent => "search_content",
            Tool::SearchSymbol => "search_symbol",
            Tool::SearchCallers => "search_callers",
            // Agent state and context (issue 15).
            Tool::SessionContextRead => "session_context_read",
            Tool::SessionContextWrite => "session_context_write",
            Tool::ScratchpadWrite => "scratchpad_write",
            Tool::ScratchpadRead => "scratchpad_read",
            Tool::ScratchpadReadAll => "scratchpad_read_all",
            Tool::ScratchpadSearch => "scratchpad_search",
            Tool::ScratchpadDelete => "scratchpad_delete",
            Tool::ChatroomSend => "chatroom_send",
            Tool::ChatroomRead => "chatroom_read",
            Tool::ChangesRead => "changes_read",
            Tool::JsonFormat => "json_format",
            Tool::JsonMinify => "json_minify",
            Tool::JsonGet => "json_get",
            Tool::JsonKeys => "json_keys",
            Tool::JsonSearch => "json_search",
            Tool::JsonToText => "json_to_text",
            Tool::JsonValidate => "json_validate",
            Tool::JsonMerge => "json_merge",
            // Http (issue 15).
            Tool::HttpGet => "http_get",
            Tool::HttpHead => "http_head",
            Tool::HttpPost => "http_post",
            Tool::HttpPut => "http_put",
            Tool::HttpPatch => "http_patch",
            Tool::HttpDelete => "http_delete",
            // SubAgent (issue 15).
            Tool::SubAgentExplore => "sub_agent_explore",
            Tool::SubAgentLocate => "sub_agent_locate",
            // Document.
            Tool::DocumentExtractText => "document_extract_text",
            Tool::DocumentGetInfo => "document_get_info",
            Tool::DocumentListSheets => "document_list_sheets",
            Tool::DocumentGetSheet => "document_get_sheet",
            // Memory.
            Tool::MemoryAppend => "memory_append",
            Tool::MemorySearch => "memory_search",
            Tool::MemoryGet => "memory_get",
            // The missing FileSystem and Shell tools and Probe (issue 29).
            Tool::StatFile => "stat_file",
            Tool::PathExists => "path_exists",
            Tool::SaveFileSummary => "save_file_summary",
            Tool::ShellSetEnv => "shell_set_env",
            Tool::ShellGetWorkingDirectory => "shell_get_working_directory",
            Tool::ProbeCode => "probe_code",
            Tool::ProbeAssertOutput => "probe_assert_output",
            Tool::ProbeCompareOutputs => "probe_compare_outputs",
            Tool::ProbeRunHypothesis => "probe_run_hypothesis",
            // CodeExecution.
            Tool::CodeExecutionCheckDocker => "code_execution_check_docker",
            Tool::SandboxRun => "sandbox_run",
            Tool::ReplStart => "repl_start",
            Tool::ReplExec => "repl_exec",
            Tool::ReplReset => "repl_reset",
            Tool::ReplStop => "repl_stop",
            // tama.
            Tool::TamaBash => "tama_bash",
            Tool::TamaHttpGet => "tama_http_get",
            Tool::TamaHttpPost => "tama_http_post",
            Tool::TamaFilesRead => "tama_files_read",
            Tool::TamaFilesWrite => "tama_files_write",
            Tool::TamaMemSet => "tama_mem_set",
            Tool::TamaMemGet => "tama_mem_get",
            Tool::TamaMemAppend => "tama_mem_append",
            Tool::ReadSkill => "read_skill",
        }
    }

    /// The plugin that offers this tool.
    pub fn plugin(self) -> Plugin {
        match self {
            Tool::ReadFile
            | Tool::ListFiles
            | Tool::WriteFile
            | Tool::PatchFile
            | Tool::DeleteFile => Plugin::FileSystem,
            Tool::ShellRun => Plugin::Shell,
            Tool::ChangesReadLatest => Plugin::Changes,
            Tool::Handoff => Plugin::Handoff,
            Tool::Finish => Plugin::Finish,
            // Git and the rest of Shell.
            Tool::GitStatus
            | Tool::GitDiff
            | Tool::GitLog
            | Tool::GitShow
            | Tool::GitBranchList
            | Tool::GitStashList
            | Tool::GitAdd
            | Tool::GitCommit
            | Tool::GitCheckout
            | Tool::GitCreateBranch
            | Tool::GitInit
            | Tool::GitStash
            | Tool::GitStashPop
            | Tool::GitReset
            | Tool::GitPush
            | Tool::GitPull => Plugin::Git,
            Tool::ShellRunScript
            | Tool::ShellRunBackground
            | Tool::ShellGetJobStatus
            | Tool::ShellGetJobOutput
            | Tool::ShellKillJob
            | Tool::ShellGetEnv
            | Tool::ShellWhich => Plugin::Shell,
            // Search and FileSystem in full (issue 15).
            Tool::GrepFile
            | Tool::GetFileInfo
            | Tool::GetFileSummary
            | Tool::ListDirectory
            | Tool::CreateDirectory
            | Tool::CopyFile
            | Tool::MoveFile
            | Tool::DeleteDirectory
            | Tool::SetPermissions => Plugin::FileSystem,
            Tool::SearchFiles | Tool::SearchContent | Tool::SearchSymbol | Tool::SearchCallers => {
                Plugin::Search
            }
            // Agent state and context (issue 15).
            Tool::SessionContextRead | Tool::SessionContextWrite => Plugin::SessionContext,
            Tool::ScratchpadWrite
            | Tool::ScratchpadRead
            | Tool::ScratchpadReadAll
            | Tool::ScratchpadSearch
            | Tool::ScratchpadDelete => Plugin::Scratchpad,
            Tool::ChatroomSend | Tool::ChatroomRead => Plugin::Chatroom,
            Tool::ChangesRead => Plugin::Changes,
            Tool::JsonFormat
            | Tool::JsonMinify
            | Tool::JsonGet
            | Tool::JsonKeys
            | Tool::JsonSearch
            | Tool::JsonToText
            | Tool::JsonValidate
            | Tool::JsonMerge => Plugin::Json,
            // Http (issue 15).
            Tool::HttpGet
            | Tool::HttpHead
            | Tool::HttpPost
            | Tool::HttpPut
            | Tool::HttpPatch
            | Tool::HttpDelete => Plugin::Http,
            // SubAgent (issue 15).
            Tool::SubAgentExplore | Tool::SubAgentLocate => Plugin::SubAgent,
            Tool::DocumentExtractText
            | Tool::DocumentGetInfo
            | Tool::DocumentListSheets
            | Tool::DocumentGetSheet => Plugin::Document,
            Tool::MemoryAppend | Tool::MemorySearch | Tool::MemoryGet => Plugin::Memory,
            // The missing FileSystem and Shell tools and Probe (issue 29).
            Tool::StatFile | Tool::PathExists | Tool::SaveFileSummary => Plugin::FileSystem,
            Tool::ShellSetEnv | Tool::ShellGetWorkingDirectory => Plugin::Shell,
            Tool::ProbeCode
            | Tool::ProbeAssertOutput
            | Tool::ProbeCompareOutputs
            | Tool::ProbeRunHypothesis => Plugin::Probe,
            Tool::CodeExecutionCheckDocker
            | Tool::SandboxRun
            | Tool::ReplStart
            | Tool::ReplExec
            | Tool::ReplReset
            | Tool::ReplStop => Plugin::CodeExecution,
            Tool::TamaBash
            | Tool::TamaHttpGet
            | Tool::TamaHttpPost
            | Tool::TamaFilesRead
            | Tool::TamaFilesWrite
            | Tool::TamaMemSet
            | Tool::TamaMemGet
            | Tool::TamaMemAppend
            | Tool::ReadSkill => Plugin::Tama,
        }
    }

    /// The capability tag that grants this tool when its plugin lists `Capabilities`.
    pub fn capability(self) -> Capability {
        match self {
            Tool::ReadFile | Tool::ListFiles | Tool::ChangesReadLatest => Capability::Read,
            Tool::WriteFile | Tool::PatchFile => Capability::Write,
            Tool::DeleteFile => Capability::Delete,
            Tool::ShellRun => Capability::Run,
            Tool::Handoff => Capability::Handoff,
            Tool::Finish => Capability::Finish,
            // Git and the rest of Shell: upstream's tags.
            Tool::GitStatus
            | Tool::GitDiff
            | Tool::GitLog
            | Tool::GitShow
            | Tool::GitBranchList
            | Tool::GitStashList
            | Tool::ShellGetJobStatus
            | Tool::ShellGetJobOutput
            | Tool::ShellGetEnv
            | Tool::ShellWhich => Capability::Read,
            Tool::GitAdd
            | Tool::GitCommit
            | Tool::GitCheckout
            | Tool::GitCreateBranch
            | Tool::GitInit
            | Tool::GitStash
            | Tool::GitStashPop
            | Tool::GitReset
            | Tool::GitPush
            | Tool::GitPull => Capability::Write,
            Tool::ShellRunScript | Tool::ShellRunBackground | Tool::ShellKillJob => Capability::Run,
            // Search and FileSystem in full (issue 15): upstream's tags.
            Tool::GrepFile
            | Tool::GetFileInfo
            | Tool::GetFileSummary
            | Tool::ListDirectory
            | Tool::SearchFiles
            | Tool::SearchContent
            | Tool::SearchSymbol
            | Tool::SearchCallers => Capability::Read,
            Tool::CreateDirectory | Tool::CopyFile | Tool::MoveFile | Tool::SetPermissions => {
                Capability::Write
            }
            Tool::DeleteDirectory => Capability::Delete,
            // Agent state and context (issue 15): upstream's tags (`PluginCapabilityMap`);
            // upstream lists none for SessionContext, here its reader is `read` and its
            // writer `write`, so `Capabilities` can narrow it too.
            Tool::SessionContextRead
            | Tool::ScratchpadRead
            | Tool::ScratchpadReadAll
            | Tool::ScratchpadSearch
            | Tool::ChatroomRead
            | Tool::ChangesRead
            | Tool::JsonFormat
            | Tool::JsonMinify
            | Tool::JsonGet
            | Tool::JsonKeys
            | Tool::JsonSearch
            | Tool::JsonToText
            | Tool::JsonValidate => Capability::Read,
            Tool::SessionContextWrite
            | Tool::ScratchpadWrite
            | Tool::ScratchpadDelete
            | Tool::ChatroomSend
            | Tool::JsonMerge => Capability::Write,
            // Http (issue 15): upstream's tags, one per method (`head` is a `get`).
            Tool::HttpGet | Tool::HttpHead => Capability::Get,
            Tool::HttpPost => Capability::Post,
            Tool::HttpPut => Capability::Put,
            Tool::HttpPatch => Capability::Patch,
            Tool::HttpDelete => Capability::Delete,
            // SubAgent (issue 15): upstream's map lists none (always offered); a sub-agent
            // only reads, so `read` grants both and `Capabilities` can narrow it.
            Tool::SubAgentExplore | Tool::SubAgentLocate => Capability::Read,
            // Document: every tool only reads.
            Tool::DocumentExtractText
            | Tool::DocumentGetInfo
            | Tool::DocumentListSheets
            | Tool::DocumentGetSheet => Capability::Read,
            Tool::MemoryAppend => Capability::Write,
            Tool::MemorySearch | Tool::MemoryGet => Capability::Read,
            // The missing FileSystem and Shell tools and Probe (issue 29): upstream's tags
            // (`PluginCapabilityMap`); upstream lists none for `stat_file` and `path_exists`,
            // here they are `read` like `get_file_info`, so `Capabilities` can narrow them.
            Tool::StatFile | Tool::PathExists | Tool::ShellGetWorkingDirectory => Capability::Read,
            Tool::SaveFileSummary => Capability::Write,
            Tool::ShellSetEnv
            | Tool::ProbeCode
            | Tool::ProbeAssertOutput
            | Tool::ProbeCompareOutputs
            | Tool::ProbeRunHypothesis => Capability::Run,
            // CodeExecution: checking is a read; everything else runs or keeps code to run.
            Tool::CodeExecutionCheckDocker => Capability::Read,
            Tool::SandboxRun
            | Tool::ReplStart
            | Tool::ReplExec
            | Tool::ReplReset
            | Tool::ReplStop => Capability::Run,
            // tama.
            Tool::TamaBash => Capability::Run,
            Tool::TamaHttpGet => Capability::Get,
            Tool::TamaHttpPost => Capability::Post,
            Tool::TamaFilesRead | Tool::TamaMemGet | Tool::ReadSkill => Capability::Read,
            Tool::TamaFilesWrite | Tool::TamaMemSet | Tool::TamaMemAppend => Capability::Write,
        }
    }

    /// The action category of the permission policy this tool falls in, if any. A
    /// `shell_run` is `command_execution` here; the VM puts a git write under `git_write`.
    pub fn category(self) -> Option<Category> {
        match self {
            Tool::WriteFile | Tool::PatchFile | Tool::DeleteFile => Some(Category::FileWriteDelete),
            Tool::ShellRun => Some(Category::CommandExecution),
            // Git and the rest of Shell.
            Tool::ShellRunScript | Tool::ShellRunBackground => Some(Category::CommandExecution),
            Tool::GitAdd
            | Tool::GitCommit
            | Tool::GitCheckout
            | Tool::GitCreateBranch
            | Tool::GitInit
            | Tool::GitStash
            | Tool::GitStashPop
            | Tool::GitReset
            | Tool::GitPush
            | Tool::GitPull => Some(Category::GitWrite),
            // Search and FileSystem in full (issue 15).
            Tool::CreateDirectory
            | Tool::CopyFile
            | Tool::MoveFile
            | Tool::DeleteDirectory
            | Tool::SetPermissions => Some(Category::FileWriteDelete),
            // Http (issue 15): every request, reads included, is a network call.
            Tool::HttpGet
            | Tool::HttpHead
            | Tool::HttpPost
            | Tool::HttpPut
            | Tool::HttpPatch
            | Tool::HttpDelete => Some(Category::NetworkApi),
            // Probe (issue 29): every probe runs code, as `shell_run` does. `shell_set_env`
            // runs nothing (the commands it affects are judged when they run), and
            // `save_file_summary` keeps a note in memory, not a file.
            Tool::ProbeCode
            | Tool::ProbeAssertOutput
            | Tool::ProbeCompareOutputs
            | Tool::ProbeRunHypothesis => Some(Category::CommandExecution),
            // CodeExecution: the two that run code, as `shell_run` does.
            Tool::SandboxRun | Tool::ReplExec => Some(Category::CommandExecution),
            // tama's tools fall in the categories of the tools they stand for.
            Tool::TamaBash => Some(Category::CommandExecution),
            Tool::TamaHttpGet | Tool::TamaHttpPost => Some(Category::NetworkApi),
            Tool::TamaFilesWrite => Some(Category::FileWriteDelete),
            _ => None,
        }
    }

    /// Whether this tool needs the network as well as its category (`git_push`,
    /// `git_pull`): the policy's `network_api` must allow it too.
    pub fn needs_network(self) -> bool {
        matches!(self, Tool::GitPush | Tool::GitPull)
    }

    /// The tool a called name stands for: the exact name (`write_file`), or the forms
    /// Semantic Kernel qualifies it with, by its own plugin only (`FileSystem-write_file`,
    /// `FileSystem_write_file`, `FileSystem.write_file`); ASCII case-insensitive. Nothing
    /// else: not a name that merely contains a tool's (`my_write_file`, `write_file_x`), not
    /// another plugin's prefix (`Shell-write_file`).
    pub fn resolve(called: &str) -> Option<Tool> {
        // tama 0.0.1's names of its file tools.
        if called.eq_ignore_ascii_case("tama_read_file") {
            return Some(Tool::TamaFilesRead);
        }
        if called.eq_ignore_ascii_case("tama_write_file") {
            return Some(Tool::TamaFilesWrite);
        }
        Tool::ALL.iter().copied().find(|tool| {
            if called.eq_ignore_ascii_case(tool.name()) {
                return true;
            }
            let plugin = tool.plugin().as_str();
            let (Some(prefix), Some(rest)) =
                (called.get(..plugin.len()), called.get(plugin.len()..))
            else {
                return false;
            };
            prefix.eq_ignore_ascii_case(plugin)
                && matches!(rest.as_bytes().first(), Some(b'-' | b'_' | b'.'))
                && rest[1..].eq_ignore_ascii_case(tool.name())
        })
    }

    /// Is this tool offered to an agent with these `Plugins` and `Capabilities`? A plugin
    /// without a `Capabilities` entry offers all its tools.
    pub fn offered(self, plugins: &[String], capabilities: &[(Plugin, Vec<Capability>)]) -> bool {
        let plugin = self.plugin();
        // A tama skill unlocks its tools one by one: they are listed by name.
        let has_plugin = plugins.iter().any(|name| {
            Plugin::parse(name) == Some(plugin)
                || (plugin == Plugin::Tama && name.eq_ignore_ascii_case(self.name()))
        });
        let granted = capabilities
            .iter()
            .filter(|(listed, _)| *listed == plugin)
            .map(|(_, tags)| tags.contains(&self.capability()))
            .reduce(|a, b| a || b)
            .unwrap_or(true);
        has_plugin && granted
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_names_and_own_plugin_prefixes_resolve() {
        for called in [
            "write_file",
            "WRITE_FILE",
            "FileSystem-write_file",
            "filesystem_write_file",
            "FILESYSTEM.Write_File",
        ] {
            assert_eq!(Tool::resolve(called), Some(Tool::WriteFile), "{called}");
        }
        assert_eq!(Tool::resolve("Shell-shell_run"), Some(Tool::ShellRun));
        for called in [
            "write_file_x",
            "my_write_file",
            "FileSystem-write_filex",
            "read_file_then_write_file",
            "Shell-write_file",
            "FileSystem--write_file",
            "FileSystem write_file",
            " write_file",
            "write_file ",
            "FileSystem-",
            "",
            "launch_missiles",
        ] {
            assert_eq!(Tool::resolve(called), None, "{called}");
        }
    }

    #[test]
    fn capabilities_narrow_a_plugin() {
        let plugins = vec!["FileSystem".to_string(), "shell".to_string()];
        let read_only = vec![(Plugin::FileSystem, vec![Capability::Read])];
        assert!(Tool::ReadFile.offered(&plugins, &read_only));
        assert!(Tool::ListFiles.offered(&plugins, &read_only));
        assert!(!Tool::WriteFile.offered(&plugins, &read_only));
        assert!(!Tool::DeleteFile.offered(&plugins, &read_only));
        assert!(Tool::ShellRun.offered(&plugins, &read_only));
        assert!(!Tool::ShellRun.offered(&["FileSystem".to_string()], &[]));
        assert_eq!(
            Plugin::FileSystem.capabilities(),
            vec![Capability::Read, Capability::Write, Capability::Delete]
        );
    }

    #[test]
    fn git_and_shell_carry_upstreams_names_and_tags() {
        assert_eq!(Tool::resolve("Git-git_commit"), Some(Tool::GitCommit));
        assert_eq!(Tool::resolve("git_stash_pop"), Some(Tool::GitStashPop));
        assert_eq!(Tool::resolve("Shell.shell_which"), Some(Tool::ShellWhich));
        assert_eq!(Tool::resolve("Shell-git_commit"), None);
        assert_eq!(Tool::resolve("git_commit_all"), None);
        assert_eq!(
            Plugin::Git.capabilities(),
            vec![Capability::Read, Capability::Write]
        );
        assert_eq!(
            Plugin::Shell.capabilities(),
            vec![Capability::Run, Capability::Read]
        );
        let plugins = vec!["git".to_string(), "Shell".to_string()];
        let read_only = vec![
            (Plugin::Git, vec![Capability::Read]),
            (Plugin::Shell, vec![Capability::Read]),
        ];
        assert!(Tool::GitLog.offered(&plugins, &read_only));
        assert!(!Tool::GitCommit.offered(&plugins, &read_only));
        assert!(!Tool::ShellRunBackground.offered(&plugins, &read_only));
        assert!(Tool::ShellGetJobOutput.offered(&plugins, &read_only));
        assert_eq!(Tool::GitPush.category(), Some(Category::GitWrite));
        assert!(Tool::GitPull.needs_network() && !Tool::GitCommit.needs_network());
        assert_eq!(Tool::GitDiff.category(), None);
    }

    #[test]
    fn search_is_a_read_only_plugin_with_upstream_names() {
        assert_eq!(Plugin::parse("search"), Some(Plugin::Search));
        assert_eq!(Plugin::Search.capabilities(), vec![Capability::Read]);
        assert_eq!(
            Tool::resolve("Search-search_content"),
            Some(Tool::SearchContent)
        );
        assert_eq!(Tool::resolve("FileSystem-search_content"), None);
        assert_eq!(
            Tool::resolve("filesystem.delete_directory"),
            Some(Tool::DeleteDirectory)
        );
        let plugins = vec!["FileSystem".to_string(), "Search".to_string()];
        let read_only = vec![
            (Plugin::FileSystem, vec![Capability::Read]),
            (Plugin::Search, vec![Capability::Read]),
        ];
        let offered: Vec<&str> = Tool::ALL
            .iter()
            .filter(|tool| tool.offered(&plugins, &read_only))
            .map(|tool| tool.name())
            .collect();
        assert_eq!(
            offered,
            [
                "read_file",
                "list_files",
                "grep_file",
                "get_file_info",
                "get_file_summary",
                "list_directory",
                "search_files",
                "search_content",
                "search_symbol",
                "search_callers",
                "stat_file",
                "path_exists"
            ]
        );
        for tool in [
            Tool::CreateDirectory,
            Tool::CopyFile,
            Tool::MoveFile,
            Tool::DeleteDirectory,
            Tool::SetPermissions,
        ] {
            assert_eq!(tool.category(), Some(Category::FileWriteDelete), "{tool}");
        }
        assert_eq!(Tool::SearchContent.category(), None);
    }

    #[test]
    fn state_plugins_narrow_by_read_and_write() {
        let plugins = vec![
            "Scratchpad".to_string(),
            "SessionContext".to_string(),
            "json".to_string(),
        ];
        let read_only = vec![
            (Plugin::Scratchpad, vec![Capability::Read]),
            (Plugin::SessionContext, vec![Capability::Read]),
            (Plugin::Json, vec![Capability::Read]),
        ];
        for tool in [
            Tool::ScratchpadRead,
            Tool::ScratchpadReadAll,
            Tool::ScratchpadSearch,
            Tool::SessionContextRead,
            Tool::JsonGet,
        ] {
            assert!(tool.offered(&plugins, &read_only), "{tool}");
        }
        for tool in [
            Tool::ScratchpadWrite,
            Tool::ScratchpadDelete,
            Tool::SessionContextWrite,
            Tool::JsonMerge,
            Tool::ChatroomSend,
        ] {
            assert!(!tool.offered(&plugins, &read_only), "{tool}");
        }
        assert_eq!(
            Plugin::Chatroom.capabilities(),
            vec![Capability::Write, Capability::Read]
        );
        assert_eq!(
            Tool::resolve("Scratchpad-scratchpad_write"),
            Some(Tool::ScratchpadWrite)
        );
        assert_eq!(
            Tool::resolve("Chatroom.chatroom_send"),
            Some(Tool::ChatroomSend)
        );
        assert_eq!(Tool::resolve("Json-scratchpad_write"), None);
        assert_eq!(Tool::resolve("changes_read"), Some(Tool::ChangesRead));
    }

    #[test]
    fn sub_agent_tools_carry_upstreams_names_and_only_read() {
        assert_eq!(Plugin::parse("subagent"), Some(Plugin::SubAgent));
        assert_eq!(Plugin::SubAgent.capabilities(), vec![Capability::Read]);
        assert_eq!(
            Tool::resolve("SubAgent-sub_agent_explore"),
            Some(Tool::SubAgentExplore)
        );
        assert_eq!(
            Tool::resolve("sub_agent_locate"),
            Some(Tool::SubAgentLocate)
        );
        assert_eq!(Tool::resolve("FileSystem-sub_agent_locate"), None);
        assert_eq!(Tool::resolve("sub_agent_explorer"), None);
        for tool in Plugin::SubAgent.tools() {
            assert_eq!(tool.category(), None, "{tool}");
        }
        let plugins = vec!["SubAgent".to_string()];
        let read = vec![(Plugin::SubAgent, vec![Capability::Read])];
        assert!(Tool::SubAgentExplore.offered(&plugins, &[]));
        assert!(Tool::SubAgentLocate.offered(&plugins, &read));
        assert!(!Tool::SubAgentLocate.offered(&["Search".to_string()], &read));
    }

    #[test]
    fn http_narrows_by_method_and_is_always_a_network_call() {
        assert_eq!(Plugin::parse("HTTP"), Some(Plugin::Http));
        assert_eq!(
            Plugin::Http.capabilities(),
            vec![
                Capability::Get,
                Capability::Post,
                Capability::Put,
                Capability::Patch,
                Capability::Delete
            ]
        );
        assert_eq!(Tool::resolve("Http-http_get"), Some(Tool::HttpGet));
        assert_eq!(Tool::resolve("http.http_delete"), Some(Tool::HttpDelete));
        assert_eq!(Tool::resolve("FileSystem-http_get"), None);
        let plugins = vec!["Http".to_string()];
        let get_only = vec![(Plugin::Http, vec![Capability::Get])];
        let offered: Vec<&str> = Tool::ALL
            .iter()
            .filter(|tool| tool.offered(&plugins, &get_only))
            .map(|tool| tool.name())
            .collect();
        assert_eq!(offered, ["http_get", "http_head"]);
        for tool in Plugin::Http.tools() {
            assert_eq!(tool.category(), Some(Category::NetworkApi), "{tool}");
        }
    }

    #[test]
    fn the_missing_tools_carry_upstreams_names_tags_and_categories() {
        assert_eq!(Plugin::parse("probe"), Some(Plugin::Probe));
        assert_eq!(Plugin::Probe.capabilities(), vec![Capability::Run]);
        for tool in Plugin::Probe.tools() {
            assert_eq!(tool.category(), Some(Category::CommandExecution), "{tool}");
        }
        assert_eq!(Tool::resolve("Probe-probe_code"), Some(Tool::ProbeCode));
        assert_eq!(Tool::resolve("Shell-probe_code"), None);
        assert_eq!(Tool::resolve("FileSystem.stat_file"), Some(Tool::StatFile));
        assert_eq!(
            Tool::resolve("Shell_shell_set_env"),
            Some(Tool::ShellSetEnv)
        );
        let plugins = vec![
            "FileSystem".to_string(),
            "Shell".to_string(),
            "Probe".to_string(),
        ];
        let read_only = vec![
            (Plugin::FileSystem, vec![Capability::Read]),
            (Plugin::Shell, vec![Capability::Read]),
            (Plugin::Probe, vec![Capability::Read]),
        ];
        for tool in [
            Tool::StatFile,
            Tool::PathExists,
            Tool::ShellGetWorkingDirectory,
        ] {
            assert!(tool.offered(&plugins, &read_only), "{tool}");
            assert_eq!(tool.category(), None, "{tool}");
        }
        for tool in [
            Tool::SaveFileSummary,
            Tool::ShellSetEnv,
            Tool::ProbeCode,
            Tool::ProbeRunHypothesis,
        ] {
            assert!(!tool.offered(&plugins, &read_only), "{tool}");
        }
    }
}
