//! What a replay saw besides its counts: the shape of each launch it walked (blocks, threads, how
//! many blocks a multiprocessor holds at once) and how its global atomics spread over addresses.
//! The time model needs both: how many warps wait on memory at once, and how long the busiest
//! address serialises its atomics. Collected on the side ([`observe`]) so that [`super::Counts`]
//! stays what Nsight Compute counts.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::launch::Launch;

/// One launch as the replay walked it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchShape {
    /// Blocks of the grid.
    pub blocks: u64,
    /// Threads of a block.
    pub threads: u32,
    /// Blocks one multiprocessor holds at once (by its threads and shared memory, at most 32).
    pub blocks_per_sm: u32,
}

impl LaunchShape {
    /// Warps of the whole grid.
    pub fn warps(&self) -> u64 {
        self.blocks * u64::from(self.threads.div_ceil(32))
    }

    /// Warps resident at once on `sms` multiprocessors: the grid, or as much of it as fits.
    pub fn resident_warps(&self, sms: u32) -> u64 {
        let fit = u64::from(sms) * u64::from(self.blocks_per_sm);
        self.blocks.min(fit) * u64::from(self.threads.div_ceil(32))
    }

    /// Multiprocessors with a block to run (all of them once the grid has as many blocks).
    pub fn busy_sms(&self, sms: u32) -> u32 {
        self.blocks.min(u64::from(sms)) as u32
    }
}

/// Everything [`observe`] collected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// The launches walked, in first-seen order, each shape once.
    pub launches: Vec<LaunchShape>,
    /// Global atomics (`RED`/`ATOM`), one per active lane.
    pub global_atomics: u64,
    /// Distinct addresses they went to.
    pub atomic_addresses: u64,
    /// Atomics on the busiest address.
    pub atomic_max_per_address: u64,
    /// Load sectors a block had loaded before and its share of L1 still held ([`L1_BYTES`]
    /// over the blocks resident on one multiprocessor, direct-mapped): sectors that never
    /// reach L2. Reuse between blocks, and stores (which L1 passes through), are left out.
    pub l1_hit_sectors: u64,
}

/// L1 data cache and shared memory of one multiprocessor (Hopper: 256 KiB, of which the
/// blocks' shared memory is carved out first).
pub const L1_BYTES: u64 = 256 * 1024;

#[derive(Default)]
struct Collecting {
    /// Whether an [`observe`] is running on this thread.
    active: bool,
    launches: Vec<LaunchShape>,
    atomics: HashMap<u64, u64>,
    /// The block whose L1 share `l1` holds, and that share's sector tags (index: sector modulo
    /// its length; `u64::MAX` empty).
    l1_block: Option<u64>,
    l1: Vec<u64>,
    /// Sectors of L1 one block of the launch being walked gets.
    l1_share: usize,
    l1_hits: u64,
}

thread_local! {
    static COLLECTING: RefCell<Collecting> = RefCell::new(Collecting::default());
}

/// Runs `f` (a replay) and returns what it saw of its launches and atomics on this thread.
/// Nested calls see only their own replay's.
pub fn observe<R>(f: impl FnOnce() -> R) -> (R, Shape) {
    let before =
        COLLECTING.with(|c| std::mem::replace(&mut *c.borrow_mut(), Collecting { active: true, ..Default::default() }));
    let result = f();
    let seen = COLLECTING.with(|c| std::mem::replace(&mut *c.borrow_mut(), before));
    let shape = Shape {
        launches: seen.launches,
        global_atomics: seen.atomics.values().sum(),
        atomic_addresses: seen.atomics.len() as u64,
        atomic_max_per_address: seen.atomics.values().copied().max().unwrap_or(0),
        l1_hit_sectors: seen.l1_hits,
    };
    (result, shape)
}

/// Notes a launch the replay walks (from the warp iterators).
pub(crate) fn saw_launch(launch: &Launch, blocks_per_sm: u32) {
    COLLECTING.with(|c| {
        let mut c = c.borrow_mut();
        if !c.active {
            return;
        }
        let shape = LaunchShape {
            blocks: u64::from(launch.grid.0) * u64::from(launch.grid.1),
            threads: u32::try_from(launch.block_threads()).unwrap_or(u32::MAX),
            blocks_per_sm,
        };
        if !c.launches.contains(&shape) {
            c.launches.push(shape);
        }
        let carved = u64::from(blocks_per_sm) * u64::from(launch.shared_bytes);
        c.l1_share = (L1_BYTES.saturating_sub(carved) / 32 / u64::from(blocks_per_sm.max(1))) as usize;
    });
}

/// Notes the distinct sectors of one warp's global load in block `block`: those its block's
/// L1 share still holds count as hits, the rest are put there.
pub(crate) fn saw_load(block: u64, sectors: impl Iterator<Item = u64>) {
    COLLECTING.with(|c| {
        let mut c = c.borrow_mut();
        if !c.active || c.l1_share == 0 {
            return;
        }
        if c.l1_block != Some(block) || c.l1.len() != c.l1_share {
            let share = c.l1_share;
            c.l1.clear();
            c.l1.resize(share, u64::MAX);
            c.l1_block = Some(block);
        }
        let len = c.l1.len() as u64;
        for s in sectors {
            let slot = &mut c.l1[(s % len) as usize];
            if *slot == s {
                c.l1_hits += 1;
            } else {
                *slot = s;
            }
        }
    });
}

/// Notes one global atomic at `address`.
pub(crate) fn saw_atomic(address: u64) {
    COLLECTING.with(|c| {
        let mut c = c.borrow_mut();
        if c.active {
            *c.atomics.entry(address).or_insert(0) += 1;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Model, block_warps};

    #[test]
    fn observe_collects_launches_and_atomic_spread() {
        let launch = Launch::linear(10, 256);
        let ((), shape) = observe(|| {
            let mut m = Model::new();
            let b = m.buffer(1 << 21);
            for _ in block_warps(&launch, (0, 0)) {}
            for _ in block_warps(&launch, (1, 0)) {}
            for k in 0..5 {
                m.atomic(b, 4 * (k % 2)).unwrap();
            }
        });
        assert_eq!(shape.launches, vec![LaunchShape { blocks: 10, threads: 256, blocks_per_sm: 8 }]);
        assert_eq!((shape.global_atomics, shape.atomic_addresses, shape.atomic_max_per_address), (5, 2, 3));
        assert_eq!(
            (shape.launches[0].warps(), shape.launches[0].resident_warps(1), shape.launches[0].busy_sms(132)),
            (80, 64, 10)
        );
        // Outside `observe` nothing is kept.
        let mut m = Model::new();
        let b = m.buffer(1 << 21);
        m.atomic(b, 0).unwrap();
        assert_eq!(observe(|| ()).1, Shape::default());
        // A warp loading the same sectors twice in one block hits L1 the second time; the
        // next block starts cold.
        let ((), shape) = observe(|| {
            let mut m = Model::new();
            let b = m.buffer(1 << 21);
            for block in 0..2 {
                for w in block_warps(&launch, (block, 0)).take(1) {
                    m.load(b, 4, w.lanes, |l| 4 * u64::from(l)).unwrap();
                    m.load(b, 4, w.lanes, |l| 4 * u64::from(l)).unwrap();
                }
            }
        });
        assert_eq!(shape.l1_hit_sectors, 8);
    }
}
