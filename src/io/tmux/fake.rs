//! A scripted [`Tmux`] for tests: no tmux server, no process.
//!
//! What the pane shows is a function of what happened to it so far: the
//! `world` closure gets the log of calls (`read ready`, `literal hello`, `key
//! Enter`, ...) and returns the screen to show now, with a name for the log.
//! Every call is logged. A guarded write goes only while the pane is as the
//! guard saw it, as tmux's `if-shell -F` does: the fake asks the world for the
//! screen of that moment (with the verb `look` instead of `read`), logs it as
//! `look NAME`, and compares its guard.

use super::{Guard, PaneInfo, Tmux};
use crate::core::error::{Error, Result};
use crate::core::screen::Screen;

/// What the pane shows, given the log so far and why it is asked (`read`, or
/// `look`: tmux's own check in the moment of a guarded write): (a name for
/// the log, the screen).
pub type World = Box<dyn FnMut(&[String], &str) -> (String, Screen) + Send>;

pub struct FakeTmux {
    pub pane: String,
    /// Every call, in order: `read NAME`, `look NAME`, `literal TEXT`,
    /// `paste TEXT`, `key KEY`, `held KEY` (a guarded key tmux held back),
    /// `held-paste`, `failed literal|paste|key`, `cancel-mode`.
    pub log: Vec<String>,
    world: World,
    /// Every write from now on fails (`Err`), as when tmux or the pane is gone.
    pub fail_writes: bool,
    /// Every read after a key was pressed fails (`Err`), as a tmux call that
    /// timed out on a loaded machine.
    pub fail_reads_after_key: bool,
    server_key: String,
}

impl FakeTmux {
    pub fn new(pane: &str, world: World) -> FakeTmux {
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        FakeTmux {
            pane: pane.to_string(),
            log: Vec::new(),
            world,
            fail_writes: false,
            fail_reads_after_key: false,
            // a lock of its own for each fake (tests run in parallel)
            server_key: format!("fake-{}-{n}", std::process::id()),
        }
    }

    /// The entries of the log that start with `prefix`.
    pub fn calls(&self, prefix: &str) -> Vec<&str> {
        self.log
            .iter()
            .filter(|l| l.starts_with(prefix))
            .map(String::as_str)
            .collect()
    }

    fn show(&mut self, verb: &str) -> Screen {
        let (name, mut s) = (self.world)(&self.log, verb);
        self.log.push(format!("{verb} {name}"));
        s.taken_at_ms = super::now_ms();
        s
    }

    fn write(&mut self, what: String) -> Result<()> {
        if self.fail_writes {
            self.log.push(format!("failed {what}"));
            return Err(Error::Tmux {
                cmd: what,
                msg: "the fake was told to fail".into(),
            });
        }
        self.log.push(what);
        Ok(())
    }

    /// Whether the pane is, in this moment, as `guard` saw it.
    fn holds(&mut self, guard: &Guard) -> bool {
        let now = self.show("look");
        Guard::of(&now).is_some_and(|g| g.expected() == guard.expected())
    }

    fn check_pane(&self, pane: &str) -> Result<()> {
        match pane == self.pane {
            true => Ok(()),
            false => Err(Error::NoPane(pane.to_string())),
        }
    }
}

impl Tmux for FakeTmux {
    fn read(&mut self, pane: &str) -> Result<Screen> {
        self.check_pane(pane)?;
        if self.fail_reads_after_key && self.log.iter().any(|l| l.starts_with("key ")) {
            self.log.push("failed read".into());
            return Err(crate::core::error::Error::Other(
                "tmux did not answer in time".into(),
            ));
        }
        Ok(self.show("read"))
    }
    fn resolve(&mut self, target: &str) -> Result<String> {
        self.check_pane(target)?;
        Ok(self.pane.clone())
    }
    fn list_panes(&mut self) -> Result<Vec<PaneInfo>> {
        Ok(vec![PaneInfo {
            id: self.pane.clone(),
            target: "fake:0.0".into(),
            pid: None,
            command: String::new(),
            dead: false,
        }])
    }
    fn send_literal(&mut self, pane: &str, text: &str) -> Result<()> {
        self.check_pane(pane)?;
        self.write(format!("literal {text}"))
    }
    fn send_key(&mut self, pane: &str, key: &str) -> Result<()> {
        self.check_pane(pane)?;
        self.write(format!("key {key}"))
    }
    fn send_key_guarded(&mut self, pane: &str, key: &str, guard: &Guard) -> Result<bool> {
        self.check_pane(pane)?;
        if !self.fail_writes && !self.holds(guard) {
            self.log.push(format!("held {key}"));
            return Ok(false);
        }
        self.write(format!("key {key}")).map(|()| true)
    }
    fn paste_guarded(&mut self, pane: &str, text: &str, guard: Option<&Guard>) -> Result<bool> {
        self.check_pane(pane)?;
        if let Some(g) = guard.filter(|_| !self.fail_writes) {
            if !self.holds(g) {
                self.log.push("held-paste".into());
                return Ok(false);
            }
        }
        self.write(format!("paste {text}")).map(|()| true)
    }
    fn cancel_mode(&mut self, pane: &str) -> Result<()> {
        self.check_pane(pane)?;
        self.write("cancel-mode".into())
    }
    fn server_key(&mut self) -> Result<String> {
        Ok(self.server_key.clone())
    }
    fn capture_ansi(&mut self, pane: &str) -> Result<String> {
        Ok(self.read(pane)?.rows.join("\n"))
    }
}
