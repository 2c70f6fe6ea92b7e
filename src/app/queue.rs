//! The queue and the scheduler, each started in the context whose address was handed out
//! before (`addresses.rs`), once the services and channels they hand work to are known.

use std::collections::HashMap;

use actix::{Addr, AsyncContext, Context};

use super::addresses::QueueChannels;
use super::family::FamilyParts;
use super::foundation::Foundation;
use super::platforms::PlatformContexts;
use crate::actors::llm_broker::LlmBroker;
use crate::actors::processing::ProcessingService;
use crate::actors::request_queue::{QueuePorts, RequestQueue, Router, VoiceNotes};
use crate::actors::scheduler::{Scheduler, SchedulerDeps};
use crate::config::LoadedConfig;

/// The `RequestQueue`, started: the inbox and the other stores it keeps turns in, the
/// router of slash commands to profiles, every profile's service, every channel it
/// delivers to (those through the outbox marked), this process among the workers, and the
/// broker transcribing voice notes. After the services, before the channels, which submit
/// to it.
pub(super) fn start_queue(
    loaded: &LoadedConfig,
    base: &Foundation,
    family: &FamilyParts,
    broker: &Addr<LlmBroker>,
    context: Context<RequestQueue>,
    services: HashMap<String, Addr<ProcessingService>>,
    channels: QueueChannels,
) -> Addr<RequestQueue> {
    let config = &loaded.config;
    let stores = &base.stores;
    let queue = context.address();
    context.run(
        RequestQueue::new(
            QueuePorts {
                inbox: stores.inbox.clone(),
                pending: stores.pending.clone(),
                plugin_calls: stores.pending_plugin_calls.clone(),
                script_workflows: stores.script_workflows.clone(),
                outbox: stores.outbox.clone(),
                plans: stores.plans.clone(),
            },
            Router::new(&loaded.profiles, &loaded.default_profile_id),
            services,
            channels.by_name,
            channels.durable,
            config.queue.clone(),
            base.metrics.clone(),
            base.readiness.clone(),
        )
        .with_own_chats(family.own_chats.clone())
        .with_worker(base.shared_worker.clone(), stores.channel_state.clone())
        .with_voice_notes(VoiceNotes {
            transcriber: broker.clone().recipient(),
            settings: config.voice_notes.clone(),
        }),
    );
    queue
}

/// The `Scheduler`, started: the schedules, the family and their own chats, and where it
/// hands what it fires (a reminder's outbox row to its chat platform, a task's turn to the
/// queue). After the queue, before the channels, which send it answers to reminders.
pub(super) fn start_scheduler(
    loaded: &LoadedConfig,
    base: &Foundation,
    family: &FamilyParts,
    context: Context<Scheduler>,
    platforms: &PlatformContexts,
    queue: &Addr<RequestQueue>,
) -> Addr<Scheduler> {
    let scheduler = context.address();
    context.run(Scheduler::new(SchedulerDeps {
        schedules: base.stores.schedules.clone(),
        family: family.family.clone(),
        own_chats: family.own_chats.clone(),
        settings: loaded.config.reminders.clone(),
        metrics: base.metrics.clone(),
        telemetry: base.stores.telemetry.clone(),
        channels: platforms.stored_deliveries(),
        queue: queue.clone().recipient(),
        worker: base.shared_worker.clone(),
    }));
    scheduler
}
