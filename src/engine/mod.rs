//! The pipeline run on io with a clock: wait until ready (gate, observe), deliver one body and verify it (deliver), many at once (fanout), the receipt (receipt), the durable queue (queue), and ask (deliver, wait for the turn, read the answer).

pub mod ask;
pub mod deliver;
pub mod fanout;
pub mod gate;
pub mod observe;
pub mod queue;
pub mod receipt;
pub mod sink;
