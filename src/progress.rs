//! Progress on stderr for the commands that run longer than a second.
//!
//! ```text
//! terminal      a spinner with the elapsed time for one step; a bar with the estimated time
//!               left for counted work (layers, runs)
//! not a terminal (a log, a pipe, CI)
//!               plain lines: a step once it has run for a second and its time as it ends
//!               (a step that ends sooner, or fails sooner, prints nothing: a failure stays
//!               one sentence); for counted work, each item's time with how many are done and
//!               about how long is left
//! --json        nothing (stdout holds the one JSON object; stderr stays quiet)
//! ```
//!
//! The plain lines' estimate is the time since the start over the items done, times the items
//! left (the items of one run — a chain's layers, a benchmark's runs — are of one size or
//! grow slowly; steps between the items count into it); the terminal's bar shows indicatif's.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a step runs before its line is printed (not on a terminal).
const QUIET_FOR: Duration = Duration::from_secs(1);

/// A line printed once its step has run for [`QUIET_FOR`], unless the step ends first.
struct DelayedLine {
    /// Dropped when the step ends, which wakes the thread.
    ended: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
    shown: Arc<AtomicBool>,
}

impl DelayedLine {
    fn new(line: String) -> Self {
        let (ended, wait) = channel::<()>();
        let shown = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&shown);
        let thread = std::thread::Builder::new()
            .name("zkmha-progress".into())
            .spawn(move || {
                if wait.recv_timeout(QUIET_FOR) == Err(RecvTimeoutError::Timeout) {
                    eprintln!("{line}");
                    flag.store(true, Ordering::SeqCst);
                }
            })
            .ok();
        Self { ended: Some(ended), thread, shown }
    }

    /// Ends the wait; whether the line was printed.
    fn end(&mut self) -> bool {
        self.ended = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.shown.load(Ordering::SeqCst)
    }
}

/// Where progress goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// Nothing (`--json`).
    Quiet,
    /// A spinner or a bar redrawn in place.
    Terminal,
    /// One plain line per event.
    Lines,
}

impl Output {
    fn choose(quiet: bool) -> Self {
        if quiet {
            Output::Quiet
        } else if std::io::stderr().is_terminal() {
            Output::Terminal
        } else {
            Output::Lines
        }
    }
}

/// One step, or `total` counted items, in progress.
pub struct Progress {
    output: Output,
    bar: ProgressBar,
    /// What the whole is ("proving the chain's layers").
    message: String,
    /// The counted items' name ("layers"); `None` for one step.
    unit: Option<&'static str>,
    total: u64,
    done: u64,
    started: Instant,
    /// The current item, when it started, and whether it counts towards `total`.
    item: Option<(String, Instant, bool)>,
    /// A step's line, not printed yet (not on a terminal).
    delayed: Option<DelayedLine>,
}

/// `"12.3 s"` or `"4 min 05 s"`.
pub fn duration_words(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else {
        let whole = duration.as_secs();
        format!("{} min {:02} s", whole / 60, whole % 60)
    }
}

/// The time left for `total − done` items at the mean time of the `done` ones in `elapsed`.
pub fn time_left(elapsed: Duration, done: u64, total: u64) -> Option<Duration> {
    let done32 = u32::try_from(done).ok().filter(|&d| d > 0)?;
    let left = u32::try_from(total.saturating_sub(done)).ok()?;
    (elapsed / done32).checked_mul(left)
}

impl Progress {
    /// One step: a spinner with the elapsed time on a terminal, else a line now and one with
    /// its time at [`Progress::finish`].
    pub fn step(message: &str, quiet: bool) -> Self {
        let output = Output::choose(quiet);
        let bar = match output {
            Output::Terminal => {
                let bar = ProgressBar::new_spinner().with_message(message.to_string());
                if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                    bar.set_style(style);
                }
                bar.enable_steady_tick(Duration::from_millis(100));
                bar
            }
            Output::Lines | Output::Quiet => ProgressBar::hidden(),
        };
        let delayed = (output == Output::Lines).then(|| DelayedLine::new(format!("zkmha: {message} …")));
        Self {
            output,
            bar,
            message: message.to_string(),
            unit: None,
            total: 0,
            done: 0,
            started: Instant::now(),
            item: None,
            delayed,
        }
    }

    /// `total` items of one kind (`unit`, plural): a bar with the estimated time left on a
    /// terminal, else a line per item done.
    pub fn counted(message: &str, total: u64, unit: &'static str, quiet: bool) -> Self {
        let output = Output::choose(quiet);
        let bar = match output {
            Output::Terminal => {
                let bar = ProgressBar::new(total).with_message(message.to_string());
                if let Ok(style) = ProgressStyle::with_template(&format!(
                    "{{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit} {{elapsed}}, about {{eta}} left"
                )) {
                    bar.set_style(style);
                }
                bar.enable_steady_tick(Duration::from_millis(200));
                bar
            }
            Output::Lines => {
                eprintln!("zkmha: {message}: {total} {unit} …");
                ProgressBar::hidden()
            }
            Output::Quiet => ProgressBar::hidden(),
        };
        Self {
            output,
            bar,
            message: message.to_string(),
            unit: Some(unit),
            total,
            done: 0,
            started: Instant::now(),
            item: None,
            delayed: None,
        }
    }

    /// Starts the next counted item (`what`: "8 heads", "layer 3: proving"); the previous
    /// item, if any, has ended.
    pub fn start_item(&mut self, what: String) {
        self.start(what, true);
    }

    /// Starts a step between the counted items (timed, not counted: "committing the
    /// boundaries"); the previous item, if any, has ended.
    pub fn start_step(&mut self, what: String) {
        self.start(what, false);
    }

    fn start(&mut self, what: String, counted: bool) {
        self.end_item();
        match self.output {
            Output::Terminal => self.bar.set_message(format!("{}: {what}", self.message)),
            Output::Lines if !counted => eprintln!("zkmha: {what} …"),
            Output::Lines | Output::Quiet => {}
        }
        self.item = Some((what, Instant::now(), counted));
    }

    /// Ends the current item (one more done if it is counted), if one was started.
    pub fn end_item(&mut self) {
        let Some((what, at, counted)) = self.item.take() else {
            return;
        };
        if counted {
            self.done += 1;
            self.bar.set_position(self.done);
        }
        if self.output != Output::Lines {
            return;
        }
        let took = duration_words(at.elapsed());
        if !counted {
            eprintln!("zkmha: {what} took {took}");
            return;
        }
        let left = time_left(self.started.elapsed(), self.done, self.total)
            .filter(|_| self.done < self.total)
            .map(|left| format!(", about {} left", duration_words(left)))
            .unwrap_or_default();
        eprintln!(
            "zkmha: {what} took {took} ({} of {} {}{left})",
            self.done,
            self.total,
            self.unit.unwrap_or("steps")
        );
    }

    /// The whole is done: the bar is cleared; as lines, its time (a step's only when its
    /// first line was printed).
    pub fn finish(mut self) {
        self.end_item();
        self.bar.finish_and_clear();
        let shown = self.delayed.as_mut().is_none_or(DelayedLine::end);
        if self.output == Output::Lines && shown {
            eprintln!("zkmha: {} took {}", self.message, duration_words(self.started.elapsed()));
        }
    }
}

impl Drop for Progress {
    /// A step left unfinished (an error on the way) is cleared without a time.
    fn drop(&mut self) {
        if let Some(delayed) = self.delayed.as_mut() {
            delayed.end();
        }
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_is_the_mean_item_time_times_the_items_left() {
        assert_eq!(time_left(Duration::from_secs(30), 3, 12), Some(Duration::from_secs(90)));
        assert_eq!(time_left(Duration::from_secs(30), 12, 12), Some(Duration::ZERO));
        assert_eq!(time_left(Duration::from_secs(30), 0, 12), None);
        assert_eq!(duration_words(Duration::from_millis(12_340)), "12.3 s");
        assert_eq!(duration_words(Duration::from_secs(245)), "4 min 05 s");
    }
}
