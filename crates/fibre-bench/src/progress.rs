//! Progress of a study, shown while it runs: on a terminal a bar (its clock ticks even while a
//! long point runs) with the point at work; elsewhere (a pipe, a CI log) one line as each phase
//! starts and each point ends, so that a long run is never silent.
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

pub struct Progress {
    mode: Mode,
    total: u64,
    done: u64,
    /// The point at work and when it started.
    current: Option<(String, Instant)>,
    started: Instant,
}

enum Mode {
    Quiet,
    Bar(ProgressBar),
    Lines,
}

impl Progress {
    /// `enabled` false: nothing is shown (`--quiet`).
    pub fn new(enabled: bool) -> Self {
        let mode = if !enabled {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                    .expect("template")
                    .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(500));
            Mode::Bar(bar)
        } else {
            Mode::Lines
        };
        Progress {
            mode,
            total: 0,
            done: 0,
            current: None,
            started: Instant::now(),
        }
    }

    /// Work before the points (loading a table, looking for harnesses).
    pub fn phase(&self, what: &str) {
        match &self.mode {
            Mode::Quiet => {}
            Mode::Bar(bar) => bar.set_message(what.to_string()),
            Mode::Lines => eprintln!("fibre bench: {what}"),
        }
    }

    /// How many points the run has.
    pub fn set_total(&mut self, total: u64) {
        self.total = total;
        if let Mode::Bar(bar) = &self.mode {
            bar.set_length(total);
        }
    }

    /// A point starts.
    pub fn start(&mut self, what: String) {
        if let Mode::Bar(bar) = &self.mode {
            bar.set_message(what.clone());
        }
        self.current = Some((what, Instant::now()));
    }

    /// The point started last is done (`note`: why it was skipped, if it was).
    pub fn finish(&mut self, note: Option<&str>) {
        self.done += 1;
        match (&self.mode, self.current.take()) {
            (Mode::Bar(bar), _) => bar.inc(1),
            (Mode::Lines, Some((what, since))) => eprintln!(
                "fibre bench: [{}/{}] {what}: {} ({:.0} s so far)",
                self.done,
                self.total,
                note.map_or_else(
                    || format!("{:.1} s", since.elapsed().as_secs_f64()),
                    str::to_string
                ),
                self.started.elapsed().as_secs_f64()
            ),
            _ => {}
        }
    }

    pub fn clear(&self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}
