//! Per-dispatch GPU times from timestamp queries, for `tinygpt bench
//! --profile`.
//!
//! The normal path records a whole step into one compute pass. Profiling
//! records the same dispatches, in the same order and in one submission, but
//! each in a compute pass of its own whose beginning and end write a
//! timestamp (`TIMESTAMP_QUERY`; no timestamps inside passes are needed).
//! A dispatch's time is the difference of its two timestamps.
//! [`TimedPass`] times a whole pass of many dispatches instead: what they
//! cost back to back, barriers included.

use crate::kernel::BoundKernel;
use crate::{GpuContext, GpuError};
use std::collections::HashMap;

/// Timestamps per query set: wgpu's cap.
const QUERIES_PER_SET: u32 = wgpu::QUERY_SET_MAX_QUERIES;

/// The GPU time of one dispatch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DispatchTime {
    /// Registry key of its pipeline.
    pub key: &'static str,
    /// Its grid (workgroups in x, y, z): which product or row count a
    /// call of a shared pipeline was.
    pub workgroups: [u32; 3],
    pub micros: f64,
}

/// The dispatches of one kernel key added up.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTotal {
    pub key: &'static str,
    pub calls: usize,
    pub total_us: f64,
    pub mean_us: f64,
}

/// Refuses profiling on an adapter without timestamp queries.
pub fn check_timestamps(ctx: &GpuContext) -> Result<(), GpuError> {
    if ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
        Ok(())
    } else {
        Err(GpuError::MissingFeature {
            feature: "TIMESTAMP_QUERY",
            needed_for: "per-dispatch GPU timing",
        })
    }
}

/// Dispatches recorded with timestamps around each, resolved into a buffer
/// that [`TimedDispatches::read`] reads once the encoder is submitted.
pub struct TimedDispatches {
    keys: Vec<(&'static str, [u32; 3])>,
    _sets: Vec<wgpu::QuerySet>,
    resolved: wgpu::Buffer,
}

impl TimedDispatches {
    /// Records each of `kernels` into its own timestamped compute pass of
    /// `enc`, then the resolve of every timestamp.
    pub fn record(
        ctx: &GpuContext,
        enc: &mut wgpu::CommandEncoder,
        kernels: &[&BoundKernel],
    ) -> Result<Self, GpuError> {
        check_timestamps(ctx)?;
        let queries = 2 * kernels.len() as u32;
        let resolved = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("profile_timestamps"),
            size: (queries.max(1) as u64) * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut sets = Vec::new();
        // Each set holds the begin/end pairs of QUERIES_PER_SET / 2 dispatches.
        let per_set = (QUERIES_PER_SET / 2) as usize;
        for (s, chunk) in kernels.chunks(per_set).enumerate() {
            let count = 2 * chunk.len() as u32;
            let set = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("profile"),
                ty: wgpu::QueryType::Timestamp,
                count,
            });
            for (i, k) in chunk.iter().enumerate() {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(k.key),
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: &set,
                        beginning_of_pass_write_index: Some(2 * i as u32),
                        end_of_pass_write_index: Some(2 * i as u32 + 1),
                    }),
                });
                k.record(&mut pass);
            }
            // Set s's pairs follow set s − 1's: a multiple of 256 bytes, as
            // resolve offsets must be.
            let offset = (s * per_set * 2 * 8) as u64;
            enc.resolve_query_set(&set, 0..count, &resolved, offset);
            sets.push(set);
        }
        Ok(Self {
            keys: kernels.iter().map(|k| (k.key, k.workgroups)).collect(),
            _sets: sets,
            resolved,
        })
    }

    /// Reads the timestamps back (after the encoder was submitted): one
    /// time per dispatch, in recording order.
    pub async fn read(&self, ctx: &GpuContext) -> Result<Vec<DispatchTime>, GpuError> {
        let bytes = ctx
            .read_bytes(&self.resolved, 16 * self.keys.len() as u64)
            .await?;
        let ticks: &[u64] = bytemuck::cast_slice(&bytes);
        let ns_per_tick = ctx.queue.get_timestamp_period() as f64;
        Ok(self
            .keys
            .iter()
            .zip(ticks.chunks_exact(2))
            .map(|(&(key, workgroups), t)| DispatchTime {
                key,
                workgroups,
                micros: t[1].saturating_sub(t[0]) as f64 * ns_per_tick / 1e3,
            })
            .collect())
    }
}

/// One compute pass of many dispatches with a timestamp at its beginning
/// and end: their GPU time back to back, as the normal path runs them.
pub struct TimedPass {
    set: wgpu::QuerySet,
    resolved: wgpu::Buffer,
}

impl TimedPass {
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        check_timestamps(ctx)?;
        Ok(Self {
            set: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("profile_pass"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            }),
            resolved: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("profile_pass_timestamps"),
                size: 16,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
        })
    }

    /// Records `kernels` into one timestamped pass of `enc`, and the resolve.
    pub fn record(&self, enc: &mut wgpu::CommandEncoder, label: &str, kernels: &[&BoundKernel]) {
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(label),
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: &self.set,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                }),
            });
            for k in kernels {
                k.record(&mut pass);
            }
        }
        enc.resolve_query_set(&self.set, 0..2, &self.resolved, 0);
    }

    /// The pass's GPU time in microseconds (after its submission).
    pub async fn read(&self, ctx: &GpuContext) -> Result<f64, GpuError> {
        let bytes = ctx.read_bytes(&self.resolved, 16).await?;
        let t: &[u64] = bytemuck::cast_slice(&bytes);
        Ok(t[1].saturating_sub(t[0]) as f64 * ctx.queue.get_timestamp_period() as f64 / 1e3)
    }
}

/// Sums the times per kernel key, largest total first.
pub fn totals_by_key(times: &[DispatchTime]) -> Vec<KernelTotal> {
    let mut by_key: HashMap<&'static str, (usize, f64)> = HashMap::new();
    for t in times {
        let e = by_key.entry(t.key).or_default();
        e.0 += 1;
        e.1 += t.micros;
    }
    let mut totals: Vec<KernelTotal> = by_key
        .into_iter()
        .map(|(key, (calls, total_us))| KernelTotal {
            key,
            calls,
            total_us,
            mean_us: total_us / calls as f64,
        })
        .collect();
    totals.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.key.cmp(b.key)));
    totals
}
