//! Peer lessons: a kernel on this device reading and writing another GPU's memory across NVLink
//! (or PCIe), beside the driver's peer copy of the same bytes. The kernels are the coalescing
//! family's, unchanged: a remote access costs whole 32-byte sectors just as a local one does, so
//! the same index functions count them, but each sector crosses a link with about a tenth of the
//! local bandwidth, and a wasted one costs ten times as much.
//!
//! Every variant needs a second device that `cuDeviceCanAccessPeer` pairs with this one; on a
//! machine without one, checks say SKIPPED with the reason and the report leaves the family out
//! with that reason.
use coalesce::coalescing::{self as lib, Load};
use coalesce::model::Counts;
use coalesce::{DeviceRead, DeviceWrite, Error, Gpu, Result};
use coalesce_kernels::coalescing::{coalescing_copy_any, coalescing_offset, coalescing_stride, offset_len, stride_len};

use crate::check::{CheckError, CheckResult, POISON_BITS, Rng, same_bits};
use crate::family::{Family, Param, Row};
use crate::measure::median_seconds;
use crate::workload::{Workload, random_buffer};
use coalesce::util::Fill;

/// Floats each benchmark moves: 256 MiB across the link.
pub const BENCH_N: usize = 1 << 26;
/// Sizes the checks run at: one element, around a warp, a 2048-float block chunk, and large.
const CHECK_SIZES: [usize; 6] = [1, 31, 33, 2049, 1_000_003, 1 << 24];

/// The peer variants, in teaching order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// The driver's peer copy from the other device into this one: the ceiling.
    MemcpyRead,
    /// The library's 16-byte copy reading the other device's buffer.
    CopyRead,
    /// The offset copy reading the other device's buffer `offset` floats in.
    OffsetRead,
    /// The stride copy reading every `stride`-th float of the other device's buffer.
    StrideRead,
    /// The driver's peer copy from this device into the other one.
    MemcpyWrite,
    /// The library's 16-byte copy writing into the other device's buffer.
    CopyWrite,
}

const OFFSET: Param = Param { name: "offset", sweep: &[0, 1, 4, 8, 16, 32], check: &[0, 1, 8, 31, 32], labels: None };
const STRIDE: Param = Param { name: "stride", sweep: &[1, 2, 4, 8, 16, 32], check: &[1, 2, 3, 32], labels: None };

impl Family for Peer {
    const NAME: &'static str = "peer";
    const ROWS: &'static [Row<Self>] = VARIANTS;

    fn check(self, gpu: &Gpu, rng: &mut Rng, value: u32) -> CheckResult<String> {
        let peer = match open_peer(gpu) {
            Ok(peer) => peer,
            Err(e) if e.is_unavailable() => return Ok(format!("SKIPPED ({e})")),
            Err(e) => return Err(e.into()),
        };
        for n in CHECK_SIZES {
            let len = self.buffer_len(n, value);
            let input = rng.f32s(len);
            let mut want = vec![f32::from_bits(POISON_BITS); len];
            self.reference(&input, &mut want, n, value)?;
            let (src, dst) = if self.writes_remote() { (gpu, &peer) } else { (&peer, gpu) };
            let d_input = src.upload(&input)?;
            let mut d_output = dst.poisoned::<f32>(len, POISON_BITS)?;
            self.run(gpu, &d_input, &mut d_output, n, value)?;
            gpu.synchronize()?;
            let (from, to) = (d_input.resident_device()?, d_output.resident_device()?);
            if (from, to) != (src.info().ordinal, dst.info().ordinal) {
                return Err(CheckError::Unexpected {
                    what: format!("n={n}: the driver's devices of the input and output"),
                    expected: format!("{} -> {}", src.info().ordinal, dst.info().ordinal),
                    got: format!("{from} -> {to}"),
                });
            }
            same_bits(&format!("n={n} from device {from} to device {to}"), &d_output.to_vec()?, &want)?;
        }
        Ok(format!(
            "n in {CHECK_SIZES:?}, device {} {} device {}",
            gpu.info().ordinal,
            if self.writes_remote() { "->" } else { "<-" },
            peer.info().ordinal
        ))
    }

    fn bench(self, gpu: &Gpu, value: u32) -> Result<Workload> {
        let peer = open_peer(gpu)?;
        let n = BENCH_N;
        // Every offset runs on the same data: buffers sized for the largest.
        let len = match self {
            Peer::OffsetRead => self.buffer_len(n, OFFSET.sweep[OFFSET.sweep.len() - 1]),
            _ => self.buffer_len(n, value),
        };
        let (src, dst) = if self.writes_remote() { (gpu, &peer) } else { (&peer, gpu) };
        let input = random_buffer::<f32>(src, len, Fill::Unit, 1)?;
        let mut output = random_buffer::<f32>(dst, len, Fill::Unit, 2)?;
        // The peer handle may go: the buffers retain its context, and `gpu` the mapping.
        Ok(Workload::new(4 * n as u64, move |gpu| self.run(gpu, &input, &mut output, n, value)))
    }

    fn model(self, value: u32, sms: u32) -> Result<Option<Counts>> {
        use coalesce::model::coalescing as model;
        let _ = sms;
        Some(match self {
            Peer::MemcpyRead | Peer::MemcpyWrite => return Ok(None),
            Peer::CopyRead | Peer::CopyWrite => model::any_offset_copy(BENCH_N, 0, 0),
            Peer::OffsetRead => model::offset_copy(Load::Cached, BENCH_N, value, OFFSET.sweep[OFFSET.sweep.len() - 1]),
            Peer::StrideRead => model::stride_copy(BENCH_N, value),
        })
        .transpose()
    }
}

/// The peer variants, one row each, in teaching order.
#[rustfmt::skip]
const VARIANTS: &[Row<Peer>] = &[
    Row::new(Peer::MemcpyRead, "memcpy_read", "cuMemcpyPeer from the other GPU into this one: the link's ceiling for the reads"),
    Row::new(Peer::CopyRead, "copy_read", "the library's 16-byte copy, its loads from the other GPU: 16 sectors a warp request, every byte used, as locally").launches(coalescing_copy_any),
    Row::new(Peer::OffsetRead, "offset_read", "offset copy reading the other GPU: 5 sectors a request off a 32-byte boundary, each across the link").launches(coalescing_offset).swept(OFFSET),
    Row::new(Peer::StrideRead, "stride_read", "stride copy reading the other GPU: min(32, 4*stride) sectors for 4 useful, every wasted one across the link").launches(coalescing_stride).swept(STRIDE),
    Row::new(Peer::MemcpyWrite, "memcpy_write", "cuMemcpyPeer from this GPU into the other one: the link's ceiling for the writes"),
    Row::new(Peer::CopyWrite, "copy_write", "the library's 16-byte copy, its stores into the other GPU's memory").launches(coalescing_copy_any),
];

impl Peer {
    /// Whether the variant writes the other device's memory (else it reads it).
    const fn writes_remote(self) -> bool {
        matches!(self, Peer::MemcpyWrite | Peer::CopyWrite)
    }

    /// Elements each buffer holds for a copy of `n` at parameter `value`.
    fn buffer_len(self, n: usize, value: u32) -> usize {
        match self {
            Peer::OffsetRead => offset_len(n as u64, value) as usize,
            Peer::StrideRead => stride_len(n as u64, value) as usize,
            _ => n,
        }
    }

    /// One run on `gpu`, whose context maps the other device's memory.
    fn run(
        self,
        gpu: &Gpu,
        input: &impl DeviceRead<f32>,
        output: &mut impl DeviceWrite<f32>,
        n: usize,
        value: u32,
    ) -> Result<()> {
        match self {
            Peer::MemcpyRead | Peer::MemcpyWrite => gpu.memcpy_peer(&input.slice(..n)?, &mut output.slice_mut(..n)?),
            Peer::CopyRead | Peer::CopyWrite => lib::copy(gpu, &input.slice(..n)?, &mut output.slice_mut(..n)?),
            Peer::OffsetRead => lib::offset_copy(gpu, Load::Cached, input, output, n, value),
            Peer::StrideRead => lib::stride_copy(gpu, input, output, n, value),
        }
    }

    /// The CPU reference of one run.
    fn reference(self, input: &[f32], output: &mut [f32], n: usize, value: u32) -> Result<()> {
        match self {
            Peer::OffsetRead => lib::offset_copy_cpu(input, output, n, value as usize),
            Peer::StrideRead => lib::stride_copy_cpu(input, output, n, value as usize),
            _ => {
                output[..n].copy_from_slice(&input[..n]);
                Ok(())
            }
        }
    }
}

/// A handle on the first other device whose memory `gpu` can map, mapped both ways (the reads
/// and the writes), or [`Error::NoPeer`] saying why there is none.
pub fn open_peer(gpu: &Gpu) -> Result<Gpu> {
    let here = gpu.info().ordinal;
    let count = Gpu::device_count()?;
    let mut refused = Vec::new();
    for ordinal in (0..count).filter(|&d| d != here) {
        let peer = Gpu::with_device(ordinal)?;
        if gpu.can_access_peer(&peer)? && peer.can_access_peer(gpu)? {
            gpu.enable_peer_access(&peer)?;
            peer.enable_peer_access(gpu)?;
            return Ok(peer);
        }
        refused.push(ordinal.to_string());
    }
    Err(Error::NoPeer(if refused.is_empty() {
        format!("the driver reports {count} device(s); the peer lessons need two")
    } else {
        format!("device {here} cannot map device(s) {} (cuDeviceCanAccessPeer)", refused.join(", "))
    }))
}

/// One ordered pair of the peer matrix ([`matrix`]): device `reader` copying [`BENCH_N`] floats
/// out of device `source`'s memory into its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// The device whose kernel (or copy) runs, and whose memory receives the bytes.
    pub reader: u32,
    /// The device whose memory is read across the link.
    pub source: u32,
    /// GB/s of the library's 16-byte copy (`copy_read`), bytes read across the link counted
    /// once; `None` where the driver does not pair the two devices.
    pub copy_gbps: Option<f64>,
    /// GB/s of `cuMemcpyPeer` over the same bytes, in the same call.
    pub memcpy_gbps: Option<f64>,
}

/// Every ordered pair of the devices the driver reports: the library's copy on the reader,
/// loading from the source's buffer across the link, beside `cuMemcpyPeer` from the source into
/// the reader, each timed as the runs are (a median of batches, 256 MiB each). Before timing,
/// each pair's copy of 1,000,003 floats (a vector tail) is checked bit for bit. Fewer than two
/// devices is [`Error::NoPeer`]; a wrong copy, a mismatch.
pub fn matrix() -> CheckResult<Vec<Pair>> {
    let count = Gpu::device_count()?;
    if count < 2 {
        return Err(Error::NoPeer(format!("the driver reports {count} device(s); the peer matrix needs two")).into());
    }
    let gpus = (0..count).map(Gpu::with_device).collect::<Result<Vec<_>>>()?;
    let n = BENCH_N;
    // One source and one destination buffer a device, each used by every pair it is in.
    let sources = gpus.iter().map(|g| random_buffer::<f32>(g, n, Fill::Unit, 1)).collect::<Result<Vec<_>>>()?;
    let mut outputs = gpus.iter().map(|g| random_buffer::<f32>(g, n, Fill::Unit, 2)).collect::<Result<Vec<_>>>()?;
    let mut rng = Rng::new(36);
    let mut pairs = Vec::new();
    for (r, reader) in gpus.iter().enumerate() {
        for (s, source) in gpus.iter().enumerate().filter(|&(s, _)| s != r) {
            let mut pair = Pair { reader: r as u32, source: s as u32, copy_gbps: None, memcpy_gbps: None };
            if reader.can_access_peer(source)? {
                reader.enable_peer_access(source)?;
                let output = &mut outputs[r];
                let check = rng.f32s(1_000_003);
                let input = source.upload(&check)?;
                let mut got = reader.poisoned::<f32>(check.len(), POISON_BITS)?;
                lib::copy(reader, &input, &mut got)?;
                reader.synchronize()?;
                same_bits(&format!("peer copy from device {s} into device {r}"), &got.to_vec()?, &check)?;
                let gbps = |seconds: f64| 4.0 * n as f64 / seconds / 1e9;
                pair.copy_gbps = Some(gbps(median_seconds(reader, || lib::copy(reader, &sources[s], output))?));
                pair.memcpy_gbps = Some(gbps(median_seconds(reader, || reader.memcpy_peer(&sources[s], output))?));
            }
            pairs.push(pair);
        }
    }
    Ok(pairs)
}

/// What a table of [`matrix_table`] shows of a pair (`None`: the pair has no peer access).
type Cell = dyn Fn(&Pair) -> Option<String>;

/// [`matrix`]'s pairs as three markdown tables, a row a reader and a column a source: the
/// library's copy, `cuMemcpyPeer`, and the copy's speed against the driver's (its GB/s over
/// the driver's: above 1× faster).
pub fn matrix_table(pairs: &[Pair]) -> String {
    let devices = pairs.iter().map(|p| p.reader.max(p.source) + 1).max().unwrap_or(0);
    let mut md = String::new();
    let tables: [(&str, &Cell); 3] = [
        ("library copy, GB/s read across the link", &|p| p.copy_gbps.map(|g| format!("{g:.0}"))),
        ("cuMemcpyPeer, GB/s", &|p| p.memcpy_gbps.map(|g| format!("{g:.0}"))),
        ("library copy against cuMemcpyPeer (speed, >1 faster)", &|p| {
            p.copy_gbps.zip(p.memcpy_gbps).map(|(c, m)| format!("{:.3}×", c / m))
        }),
    ];
    for (title, cell) in tables {
        md.push_str(&format!("{title}: reader (row) <- source (column)\n\n| reader \\ source |"));
        for s in 0..devices {
            md.push_str(&format!(" {s} |"));
        }
        md.push_str(&format!("\n|---|{}\n", "--:|".repeat(devices as usize)));
        for r in 0..devices {
            md.push_str(&format!("| {r} |"));
            for s in 0..devices {
                let text = match pairs.iter().find(|p| p.reader == r && p.source == s) {
                    None => "—".to_string(),
                    Some(p) => cell(p).unwrap_or_else(|| "no peer access".into()),
                };
                md.push_str(&format!(" {text} |"));
            }
            md.push('\n');
        }
        md.push('\n');
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_table_puts_each_pair_in_its_cell() {
        let pairs = [
            Pair { reader: 0, source: 1, copy_gbps: Some(380.0), memcpy_gbps: Some(400.0) },
            Pair { reader: 1, source: 0, copy_gbps: None, memcpy_gbps: None },
        ];
        let md = matrix_table(&pairs);
        assert!(md.contains("| 0 | — | 380 |"), "{md}");
        assert!(md.contains("| 1 | no peer access | — |"), "{md}");
        assert!(md.contains("| 0 | — | 0.950× |"), "{md}");
    }
}
