//! The `ChannelState` port: a channel's small durable facts put, read, listed by prefix and
//! deleted.

use hearth::storage::Stores;

adapter_suite!(channel_state_put_get_list_delete,);

async fn channel_state_put_get_list_delete(stores: &Stores) {
    let state = &stores.channel_state;
    assert_eq!(state.get_state("telegram", "offset").await.unwrap(), None);
    state.put_state("telegram", "offset", "41").await.unwrap();
    state.put_state("telegram", "offset", "42").await.unwrap();
    state.put_state("telegram", "ask:b", "2").await.unwrap();
    state.put_state("telegram", "ask:a", "1").await.unwrap();
    // A prefix is literal: `%` and `_` are not wildcards.
    state.put_state("telegram", "ask%x", "3").await.unwrap();
    state.put_state("matrix", "ask:c", "3").await.unwrap();
    assert_eq!(
        state.get_state("telegram", "offset").await.unwrap(),
        Some("42".to_string())
    );
    assert_eq!(
        state.list_state("telegram", "ask:").await.unwrap(),
        vec![("ask:a".into(), "1".into()), ("ask:b".into(), "2".into())]
    );
    state.delete_state("telegram", "ask:a").await.unwrap();
    state.delete_state("telegram", "never-there").await.unwrap();
    assert_eq!(
        state.list_state("telegram", "ask:").await.unwrap(),
        vec![("ask:b".into(), "2".into())]
    );
    assert_eq!(state.get_state("matrix", "offset").await.unwrap(), None);
}
