//! `fencing run` on Windows: CMD starts suspended, joins a job object that
//! takes its whole process tree (and ends it if `fencing run` itself dies:
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`), then runs in a console process
//! group of its own. A loss sends it Ctrl-Break (what Windows has for
//! SIGTERM), then ends the job (`TerminateJobObject`, for SIGKILL) after
//! `--grace`. Ctrl-C, Ctrl-Break and closing the console, sent to `fencing
//! run`, are passed on to CMD as Ctrl-Break.

use std::os::windows::io::AsRawHandle;
use std::os::windows::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::{mpsc, Arc, Mutex, OnceLock};

use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, INVALID_HANDLE_VALUE, TRUE};
use windows_sys::Win32::System::Console::{
    GenerateConsoleCtrlEvent, SetConsoleCtrlHandler, CTRL_BREAK_EVENT,
};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
    OpenThread, ResumeThread, SuspendThread, TerminateProcess, WaitForSingleObject,
    CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED, INFINITE, THREAD_SUSPEND_RESUME,
};

use super::{Event, Phase};

/// A console control event sent to `fencing run` (CTRL_C_EVENT, ...).
pub type Sig = u32;

/// What a loss does to CMD after `--grace`.
pub const KILL: &str = "ending its job object (TerminateJobObject)";

/// The exit code CMD's processes get when a loss ends the job.
const KILLED: u32 = 1;

/// CMD: its process (handle and id) and the job that holds its tree. Plain
/// integers, so that the console handler thread can have a copy: the
/// process handle stays open (in the `Child`) until CMD is reaped, after
/// the handler no longer sees this (`Phase::Running` ends first), and the
/// job's until `fencing run` exits.
#[derive(Clone, Copy)]
pub struct Target {
    process: usize,
    pid: u32,
    job: usize,
    group: bool,
}

impl Target {
    /// Passes on a console event sent to `fencing run`: in its own group
    /// CMD gets none from the console (Ctrl-C is even off there), so it
    /// gets Ctrl-Break; in the foreground it got the event itself.
    pub fn forward(self, _sig: Sig) {
        if self.group {
            self.terminate();
        }
    }

    /// What [`Target::terminate`] does, as the report of a loss says it.
    pub fn terminating(self) -> &'static str {
        if self.group {
            "sending Ctrl-Break to"
        } else {
            "ending (TerminateProcess)"
        }
    }

    /// Ctrl-Break to CMD's process group. In the foreground there is no
    /// group of CMD's own to address (an event goes to a whole group, and
    /// CMD shares `fencing run`'s): CMD alone is ended at once.
    pub fn terminate(self) {
        if self.group {
            // SAFETY: plain call; the group id is CMD's pid.
            unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, self.pid) };
        } else {
            self.kill();
        }
    }

    /// Ends every process of CMD's job; in the foreground, CMD alone.
    pub fn kill(self) {
        // SAFETY: both handles are open (see the struct's comment).
        unsafe {
            if self.group {
                TerminateJobObject(self.job as HANDLE, KILLED);
            } else {
                TerminateProcess(self.process as HANDLE, KILLED);
            }
        }
    }

    pub fn pid(self) -> u32 {
        self.pid
    }
}

/// The handler's view of the run, set once before the handler is installed.
static PHASE: OnceLock<(Arc<Mutex<Phase>>, bool)> = OnceLock::new();

unsafe extern "system" fn on_console_event(event: u32) -> i32 {
    let Some((phase, foreground)) = PHASE.get() else {
        return 0;
    };
    let mut phase = phase.lock().unwrap_or_else(|p| p.into_inner());
    match &mut *phase {
        Phase::Opening => std::process::exit(i32::from(signal_status(event))),
        // The acquire gives up (leaving its place in line), then fencing
        // exits.
        // A second event while the first waits for the call in flight.
        Phase::Acquiring(Some(_)) => std::process::exit(i32::from(signal_status(event))),
        Phase::Acquiring(gave_up) => *gave_up = Some(event),
        Phase::Starting(pending) => *pending = Some(event),
        // At the console, Ctrl-C and Ctrl-Break reach CMD itself.
        Phase::Running(_) if *foreground && event <= CTRL_BREAK_EVENT => {}
        Phase::Running(target) => target.forward(event),
    }
    // Handled: `fencing run` stays until CMD ends, then releases the lease
    // (closing the console still ends it, after a few seconds).
    TRUE
}

/// `fencing run`'s status when a control event stopped it before CMD
/// started: as a shell reports SIGINT (128+2): Windows's own code for it,
/// STATUS_CONTROL_C_EXIT, does not fit an exit status of 0..=255.
pub fn signal_status(_event: Sig) -> u8 {
    130
}

/// Passes the console's control events on to CMD (see [`on_console_event`]).
pub fn forward_signals(foreground: bool, phase: &Arc<Mutex<Phase>>) {
    if PHASE.set((Arc::clone(phase), foreground)).is_ok() {
        // SAFETY: installs a handler with the signature Windows calls.
        unsafe { SetConsoleCtrlHandler(Some(on_console_event), TRUE) };
    }
}

/// CMD starts suspended, so that it joins its job before it can start a
/// process of its own, and, unless in the foreground, in a console process
/// group of its own.
pub fn prepare(command: &mut Command, foreground: bool) {
    let group = if foreground {
        0
    } else {
        CREATE_NEW_PROCESS_GROUP
    };
    command.creation_flags(CREATE_SUSPENDED | group);
}

/// Puts CMD, spawned suspended, in a job that ends with `fencing run`, then
/// lets it run.
pub fn started(child: &Child, foreground: bool) -> std::io::Result<Target> {
    let process = child.as_raw_handle() as HANDLE;
    // SAFETY: plain calls on handles we own; the limit structure is a
    // zeroed plain-data struct with one flag set, of the size given.
    let job = unsafe {
        let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
        if job.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        let set = SetInformationJobObject(
            job,
            JobObjectExtendedLimitInformation,
            (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
            std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        );
        if set == 0 || AssignProcessToJobObject(job, process) == 0 {
            let e = std::io::Error::last_os_error();
            CloseHandle(job);
            return Err(e);
        }
        job
    };
    threads(child.id(), |thread| {
        // SAFETY: a thread handle opened with THREAD_SUSPEND_RESUME.
        unsafe { ResumeThread(thread) };
    })?;
    Ok(Target {
        process: process as usize,
        pid: child.id(),
        job: job as usize,
        group: !foreground,
    })
}

/// Sends `Event::Exited` when CMD has exited. Its handle, open until it is
/// reaped, keeps its pid from being reused.
pub fn watch_exit(target: Target, tx: mpsc::Sender<Event>) {
    std::thread::spawn(move || {
        // SAFETY: the process handle is open until CMD is reaped, after
        // this thread's wait returned (it is reaped only once it exited).
        unsafe { WaitForSingleObject(target.process as HANDLE, INFINITE) };
        let _ = tx.send(Event::Exited);
    });
}

/// CMD's exit code when it fits an exit status, else 1 (an NTSTATUS such as
/// 0xC0000005 for an access violation does not).
pub fn shell_status(status: ExitStatus) -> u8 {
    status
        .code()
        .and_then(|code| u8::try_from(code).ok())
        .unwrap_or(1)
}

pub fn describe(status: ExitStatus) -> String {
    match status.code() {
        Some(code) if code < 0 => format!("exit status {code:#010x}"),
        Some(code) => format!("exit status {code}"),
        None => status.to_string(),
    }
}

/// Stops a process where it is (the demo's worker A): every thread
/// suspended, as SIGSTOP does on unix.
pub fn pause(child: &Child) -> std::io::Result<()> {
    threads(child.id(), |thread| {
        // SAFETY: a thread handle opened with THREAD_SUSPEND_RESUME.
        unsafe { SuspendThread(thread) };
    })
}

/// Resumes a process [`pause`] stopped.
pub fn resume(child: &Child) -> std::io::Result<()> {
    threads(child.id(), |thread| {
        // SAFETY: as in `pause`.
        unsafe { ResumeThread(thread) };
    })
}

/// How the demo says it paused and resumed a worker.
pub const PAUSED_WITH: &str = "SuspendThread on each of its threads";
pub const RESUMED_WITH: &str = "ResumeThread";

/// Calls `f` with a handle to each thread of process `pid`.
fn threads(pid: u32, mut f: impl FnMut(HANDLE)) -> std::io::Result<()> {
    // SAFETY: a snapshot handle we close; THREADENTRY32 is plain data with
    // its size set, as Thread32First requires; thread handles closed.
    unsafe {
        let snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
        if snapshot == INVALID_HANDLE_VALUE {
            return Err(std::io::Error::last_os_error());
        }
        let mut entry: THREADENTRY32 = std::mem::zeroed();
        entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
        let mut found = Thread32First(snapshot, &mut entry) != 0;
        let mut any = false;
        while found {
            if entry.th32OwnerProcessID == pid {
                let thread = OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID);
                if !thread.is_null() {
                    f(thread);
                    CloseHandle(thread);
                    any = true;
                }
            }
            found = Thread32Next(snapshot, &mut entry) != 0;
        }
        CloseHandle(snapshot);
        if any {
            Ok(())
        } else {
            Err(std::io::Error::other(format!(
                "no thread of process {pid} found"
            )))
        }
    }
}
