//! How many instructions a kernel issues for each memory or FMA instruction of its hot loop,
//! read from the SASS `ptxas` makes of the PTX: what the time model needs to bound a run by
//! instruction issue. The replay counts a run's requests, wavefronts and FLOPs; this gives the
//! instructions that come with each.

use std::path::Path;
use std::process::Command;

/// The anchor classes: instructions the replay counts, each in the replay's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// A global load or store request (`LDG`, `STG`, `LDGSTS`): one a warp instruction.
    Global,
    /// Shared-memory wavefronts without conflicts (`LDS`/`STS`): one for 32-bit accesses, two
    /// for 64-bit, four for 128-bit.
    Shared,
    /// A warp's `FFMA`: 64 FLOPs.
    Ffma,
}

impl Anchor {
    pub const ALL: [Anchor; 3] = [Anchor::Global, Anchor::Shared, Anchor::Ffma];

    /// The anchor weight of one SASS opcode (`LDS.128` and so on), 0 for the rest.
    fn weight(self, opcode: &str) -> u32 {
        match (self, opcode.split('.').next().unwrap_or("")) {
            (Anchor::Global, "LDG" | "STG" | "LDGSTS") => 1,
            (Anchor::Shared, "LDS" | "STS") => lane_words(opcode),
            (Anchor::Ffma, "FFMA") => 1,
            _ => 0,
        }
    }
}

/// One kernel's digest: for each anchor class, `(instructions, anchors)` of the innermost loop
/// that holds that class (the one with most such anchors where several do), or of the whole
/// kernel where no loop does; `None` where the kernel has none of the class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    pub kernel: String,
    pub per_anchor: [Option<(u32, u32)>; 3],
    /// The most global loads (`LDG`) a thread issues, in that same region for global requests,
    /// before an instruction uses what one of them loaded: the loads a warp keeps in flight at
    /// once. `None` without an `LDG` there.
    pub loads_in_flight: Option<u32>,
}

impl Digest {
    /// Instructions issued per anchor of `class`, if the kernel has that class.
    pub fn ratio(&self, class: Anchor) -> Option<f64> {
        let i = Anchor::ALL.iter().position(|&a| a == class)?;
        self.per_anchor[i].map(|(n, a)| f64::from(n) / f64::from(a))
    }
}

/// One SASS instruction: its address, opcode, and the target of a branch.
struct Instr {
    at: u64,
    opcode: String,
    target: Option<u64>,
    /// The registers it writes (a load's destination: `R4` of `LDG.E.128 R4, ..` is R4..=R7)
    /// and reads.
    writes: Vec<u32>,
    reads: Vec<u32>,
}

/// The general registers an operand names: `R14.64` is R14 and R15, `RZ` none.
fn registers(operand: &str, wide: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let bytes = operand.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i] == b'R' && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric());
        let digits = bytes[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if starts && digits > 0 {
            let n: u32 = operand[i + 1..i + 1 + digits].parse().unwrap_or(0);
            let pair = operand[i + 1 + digits..].starts_with(".64");
            let count = if pair { 2 } else { wide };
            out.extend(n..n + count);
            i += 1 + digits;
        } else {
            i += 1;
        }
    }
    out
}

/// The 32-bit words one lane of `opcode` moves (`.64`: two, `.128`: four): a load's
/// destination registers, and a shared access's wavefronts without conflicts.
fn lane_words(opcode: &str) -> u32 {
    opcode.split('.').skip(1).fold(1, |w, part| match part {
        "64" => 2,
        "128" => 4,
        _ => w,
    })
}

/// The instructions of each function of `cuobjdump -sass` output, by name.
fn functions(sass: &str) -> Vec<(String, Vec<Instr>)> {
    let mut out: Vec<(String, Vec<Instr>)> = Vec::new();
    for line in sass.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("Function : ") {
            out.push((name.trim().to_string(), Vec::new()));
            continue;
        }
        let Some(body) = t.strip_prefix("/*") else { continue };
        let Some((addr, rest)) = body.split_once("*/") else { continue };
        let Ok(at) = u64::from_str_radix(addr.trim(), 16) else { continue };
        let Some(text) = rest.split(';').next() else { continue };
        let mut words = text.split_whitespace().peekable();
        // A guard predicate (`@P0`, `@!PT`) comes first where there is one.
        if words.peek().is_some_and(|w| w.starts_with('@')) {
            words.next();
        }
        let Some(opcode) = words.next() else { continue };
        if !opcode.starts_with(|c: char| c.is_ascii_uppercase()) || opcode == "NOP" {
            continue;
        }
        let rest = words.collect::<Vec<_>>().join(" ");
        let operands: Vec<&str> = rest.split(',').map(str::trim).collect();
        let target = if opcode.starts_with("BRA") {
            operands.iter().filter_map(|w| w.strip_prefix("0x")).find_map(|h| u64::from_str_radix(h, 16).ok())
        } else {
            None
        };
        // Stores and reductions name no destination: every operand is read.
        let stores =
            ["ST", "STG", "STS", "RED", "REDG", "BRA", "EXIT"].iter().any(|s| opcode.split('.').next() == Some(s));
        let (writes, reads) = match operands.split_first() {
            Some((first, rest)) if !stores => {
                let w = if opcode.starts_with("LDG") { lane_words(opcode) } else { 1 };
                (registers(first, w), rest.iter().flat_map(|o| registers(o, 1)).collect())
            }
            _ => (Vec::new(), operands.iter().flat_map(|o| registers(o, 1)).collect()),
        };
        if let Some((_, instrs)) = out.last_mut() {
            instrs.push(Instr { at, opcode: opcode.to_string(), target, writes, reads });
        }
    }
    out
}

/// The region a class of anchors is counted in: the innermost loop holding some (the one with most
/// of them where several do), else the whole kernel; `(first, last)` addresses and its
/// `(instructions, anchors)`, `None` where the kernel has none of the class.
fn region(
    loops: &[(u64, u64)],
    count: &impl Fn(u64, u64, Anchor) -> (u32, u32),
    class: Anchor,
) -> Option<((u64, u64), (u32, u32))> {
    let holding: Vec<((u64, u64), (u32, u32))> =
        loops.iter().map(|&(lo, hi)| ((lo, hi), count(lo, hi, class))).filter(|l| l.1.1 > 0).collect();
    let innermost = holding
        .iter()
        .filter(|&&((lo, hi), _)| !holding.iter().any(|&((l2, h2), _)| (l2, h2) != (lo, hi) && lo <= l2 && h2 <= hi));
    let best = innermost.max_by_key(|l| (l.1.1, std::cmp::Reverse(l.0.0))).copied();
    best.or_else(|| Some(((0, u64::MAX), count(0, u64::MAX, class))).filter(|whole| whole.1.1 > 0))
}

/// The most `LDG`s issued, in order, before an instruction reads a register one of them
/// writes (or a branch leaves the straight line): `None` without an `LDG`.
fn in_flight<'a>(instrs: impl Iterator<Item = &'a Instr>) -> Option<u32> {
    let (mut most, mut batch, mut pending): (Option<u32>, u32, Vec<u32>) = (None, 0, Vec::new());
    for i in instrs {
        let used = i.reads.iter().any(|r| pending.contains(r));
        if used || i.target.is_some() {
            pending.clear();
            batch = 0;
        }
        if i.opcode.starts_with("LDG") {
            batch += 1;
            pending.extend(&i.writes);
            most = Some(most.unwrap_or(0).max(batch));
        } else {
            // An instruction that overwrites a pending register ends its wait as well.
            pending.retain(|r| !i.writes.contains(r));
        }
    }
    most
}

/// Each function's digest from `cuobjdump -sass` text.
pub fn digest(sass: &str) -> Vec<Digest> {
    functions(sass)
        .into_iter()
        .map(|(kernel, instrs)| {
            // A loop: a branch back to or before itself, over more than the branch (the trailing
            // `BRA` to itself after `EXIT` is padding).
            let loops: Vec<(u64, u64)> =
                instrs.iter().filter_map(|i| i.target.filter(|&t| t < i.at).map(|t| (t, i.at))).collect();
            let count = |lo: u64, hi: u64, class: Anchor| {
                let within = instrs.iter().filter(|i| (lo..=hi).contains(&i.at));
                within.fold((0u32, 0u32), |(n, a), i| (n + 1, a + class.weight(&i.opcode)))
            };
            let per_anchor = Anchor::ALL.map(|class| region(&loops, &count, class).map(|r| r.1));
            // Loads in flight where the global requests are counted.
            let loads_in_flight = region(&loops, &count, Anchor::Global)
                .and_then(|((lo, hi), _)| in_flight(instrs.iter().filter(|i| (lo..=hi).contains(&i.at))));
            Digest { kernel, per_anchor, loads_in_flight }
        })
        .collect()
}

/// The digest file: a header naming the ptxas that made the SASS, then a line a kernel, sorted
/// by name: `kernel`, then `instructions/anchors` (or `-`) for global, shared and FFMA.
pub fn render(digests: &[Digest], ptxas_version: &str) -> String {
    let mut rows: Vec<&Digest> = digests.iter().collect();
    rows.sort_by(|a, b| a.kernel.cmp(&b.kernel));
    let mut s = format!(
        "# Instructions per anchor in each kernel's hot loop, from SASS (builder/src/sass.rs).\n\
         # {ptxas_version}\n# kernel\tglobal\tshared\tffma\tloads in flight\n"
    );
    for d in rows {
        s.push_str(&d.kernel);
        for c in d.per_anchor {
            match c {
                Some((n, a)) => s.push_str(&format!("\t{n}/{a}")),
                None => s.push_str("\t-"),
            }
        }
        match d.loads_in_flight {
            Some(n) => s.push_str(&format!("\t{n}\n")),
            None => s.push_str("\t-\n"),
        }
    }
    s
}

/// Reads [`render`]'s text back (comment lines skipped; a malformed line is an error).
pub fn parse(text: &str) -> Result<Vec<Digest>, String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut cols = l.split('\t');
            let kernel = cols.next().unwrap_or("").to_string();
            let mut per_anchor = [None; 3];
            for slot in &mut per_anchor {
                let col = cols.next().ok_or_else(|| format!("short line: {l}"))?;
                if col != "-" {
                    let (n, a) = col.split_once('/').ok_or_else(|| format!("bad column {col:?}: {l}"))?;
                    let n = n.parse::<u32>().map_err(|e| format!("{col:?}: {e}"))?;
                    let a = a.parse::<u32>().map_err(|e| format!("{col:?}: {e}"))?;
                    if a == 0 {
                        return Err(format!("no anchors in {col:?}: {l}"));
                    }
                    *slot = Some((n, a));
                }
            }
            let loads_in_flight = match cols.next().ok_or_else(|| format!("short line: {l}"))? {
                "-" => None,
                n => Some(n.parse::<u32>().map_err(|e| format!("{n:?}: {e}"))?),
            };
            Ok(Digest { kernel, per_anchor, loads_in_flight })
        })
        .collect()
}

/// `ptxas` then `cuobjdump -sass` over `ptx` for `gpu`, digested; `cuobjdump` is looked for
/// beside `ptxas`, then on `PATH`. Also returns ptxas's version line.
pub fn digest_ptx(ptxas: &Path, ptx: &Path, gpu: &str) -> Result<(Vec<Digest>, String), String> {
    let dir = std::env::temp_dir().join(format!("coalesce-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let cubin = dir.join("module.cubin");
    let run = |cmd: &mut Command| -> Result<String, String> {
        let out = cmd.output().map_err(|e| format!("could not run {cmd:?}: {e}"))?;
        if !out.status.success() {
            return Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    run(Command::new(ptxas).args(["--gpu-name", gpu, "-o"]).arg(&cubin).arg(ptx))?;
    let version = run(Command::new(ptxas).arg("--version"))?;
    let version = version.lines().last().unwrap_or("").trim().to_string();
    let beside = ptxas.with_file_name("cuobjdump");
    let cuobjdump = if beside.is_file() { beside } else { "cuobjdump".into() };
    let sass = run(Command::new(cuobjdump).arg("-sass").arg(&cubin));
    let _ = std::fs::remove_dir_all(&dir);
    Ok((digest(&sass?), version))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SASS: &str = "\t\tFunction : k\n\
        \t/*0000*/ LDC R1, c[0x0][0x28] ;\n\
        \t/*0010*/ LDG.E R2, desc[UR4][R2.64] ;\n\
        \t/*0020*/ LDS.128 R4, [R0] ;\n\
        \t/*0030*/ FFMA R5, R4, R4, R5 ;\n\
        \t/*0040*/ FFMA R6, R4, R4, R6 ;\n\
        \t/*0050*/ IADD3 R0, R0, 0x1, RZ ;\n\
        \t/*0060*/ @P0 BRA 0x20 ;\n\
        \t/*0070*/ STG.E desc[UR4][R2.64], R5 ;\n\
        \t/*0080*/ EXIT ;\n\
        \t/*0090*/ BRA 0x90 ;\n\
        \t\tFunction : flat\n\
        \t/*0000*/ LDG.E R2, desc[UR4][R2.64] ;\n\
        \t/*0010*/ STG.E desc[UR4][R2.64], R2 ;\n\
        \t/*0020*/ EXIT ;\n";

    #[test]
    fn the_innermost_loop_holding_each_class_sets_its_ratio() {
        let d = digest(SASS);
        assert_eq!(d.len(), 2);
        // The loop 0x20..=0x60: five instructions, one LDS.128 (four wavefronts), two FFMAs.
        assert_eq!(d[0].per_anchor, [Some((10, 2)), Some((5, 4)), Some((5, 2))]);
        assert_eq!(d[0].ratio(Anchor::Ffma), Some(2.5));
        // No loop: the whole kernel, the padding branch included; no loop holds a global access.
        assert_eq!(d[1].per_anchor, [Some((3, 2)), None, None]);
        let text = render(&d, "Cuda compilation tools, test");
        assert_eq!(parse(&text).unwrap(), {
            let mut sorted = d.clone();
            sorted.sort_by(|a, b| a.kernel.cmp(&b.kernel));
            sorted
        });
        assert!(parse("k\t1/0\t-\t-\t-\n").is_err());
        assert!(parse("k\t1/2\n").is_err());
        assert!(parse("k\t1/2\t-\t-\n").is_err(), "the loads in flight are a column");
    }

    #[test]
    fn loads_in_flight_end_at_the_first_use() {
        // Three loads, then their uses: three in flight (AoS's update). A load, its use and a
        // store, three times over: one at a time (SoA's, whose stores may alias its next load).
        let sass = "\t\tFunction : three\n\
            \t/*0000*/ LDG.E R0, desc[UR4][R2.64] ;\n\
            \t/*0010*/ LDG.E R6, desc[UR4][R2.64+0x4] ;\n\
            \t/*0020*/ LDG.E.64 R8, desc[UR4][R2.64+0x8] ;\n\
            \t/*0030*/ FADD R7, R0, 2 ;\n\
            \t/*0040*/ STG.E desc[UR4][R4.64], R7 ;\n\
            \t/*0050*/ FADD R11, R9, 2 ;\n\
            \t\tFunction : serial\n\
            \t/*0000*/ LDG.E R2, desc[UR4][R2.64] ;\n\
            \t/*0010*/ FADD R15, R2, 2 ;\n\
            \t/*0020*/ STG.E desc[UR4][R4.64], R15 ;\n\
            \t/*0030*/ LDG.E R6, desc[UR4][R6.64] ;\n\
            \t/*0040*/ FADD R17, R6, 2 ;\n\
            \t\tFunction : none\n\
            \t/*0000*/ EXIT ;\n";
        let d = digest(sass);
        assert_eq!(d.iter().map(|d| d.loads_in_flight).collect::<Vec<_>>(), [Some(3), Some(1), None]);
        // `.64` takes two registers: R9, the second of R8's pair, is a use.
        assert_eq!(registers("R8", lane_words("LDG.E.64")), [8, 9]);
        assert_eq!(registers("desc[UR4][R2.64+0x8]", 1), [2, 3]);
        assert!(registers("RZ", 1).is_empty());
    }
}
