//! Timing a decoder's steps for `tinygpt bench --profile`: each dispatch of
//! a step alone, a chain of steps as sampling runs them, and the host's
//! recording alone.

use super::{encoder, Decoder, Out};
use crate::profile::{check_timestamps, DispatchTime, TimedDispatches, TimedPass};
use crate::{GpuContext, GpuError};

impl Decoder {
    /// Decodes one greedy step after `token`, each dispatch in its own
    /// timestamped pass; waits and returns the GPU time of every dispatch
    /// in order. Needs `TIMESTAMP_QUERY`.
    pub async fn profile_step(
        &mut self,
        ctx: &GpuContext,
        token: u32,
    ) -> Result<Vec<DispatchTime>, GpuError> {
        check_timestamps(ctx)?;
        self.check_room(1)?;
        let host = vec![token; self.batch];
        ctx.queue
            .write_buffer(&self.host_tokens, 0, bytemuck::cast_slice(&host));
        let mut enc = encoder(ctx);
        self.start_step(&mut enc, 0, 1);
        let timed = TimedDispatches::record(ctx, &mut enc, &self.kernels(0, Out::Pick, true))?;
        ctx.queue.submit([enc.finish()]);
        self.len += 1;
        self.next_parity = None;
        timed.read(ctx).await
    }

    /// Greedy decoding of `1 + chained` tokens after `token` in one
    /// submission, the chained steps' pass timed; waits and returns that
    /// pass's GPU time: what `chained` tokens cost back to back, as
    /// [`Self::submit_greedy`] runs them. Needs `TIMESTAMP_QUERY`.
    pub async fn profile_chain(
        &mut self,
        ctx: &GpuContext,
        token: u32,
        chained: usize,
    ) -> Result<f64, GpuError> {
        let timer = TimedPass::new(ctx)?;
        let steps = 1 + chained;
        self.check_room(steps)?;
        let host = vec![token; self.batch];
        ctx.queue
            .write_buffer(&self.host_tokens, 0, bytemuck::cast_slice(&host));
        let mut enc = encoder(ctx);
        self.record_steps(&mut enc, (1, steps), Out::Pick, (Some(&timer), None));
        ctx.queue.submit([enc.finish()]);
        self.len += steps;
        self.next_parity = None;
        timer.read(ctx).await
    }

    /// Records what [`Self::profile_chain`] submits, and drops it: the
    /// host's side of `1 + chained` tokens, for timing.
    pub fn record_only(&self, ctx: &GpuContext, chained: usize) {
        let mut enc = encoder(ctx);
        self.record_steps(&mut enc, (1, 1 + chained), Out::Pick, (None, None));
        drop(enc.finish());
    }
}
