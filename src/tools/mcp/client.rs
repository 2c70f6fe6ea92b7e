//! hearth's side of one MCP connection (rmcp's `ClientHandler`): what it tells the server
//! about itself, and what it does with the server's requests and notifications.

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    ErrorData, FormElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient};

use super::elicitation::answer_elicitation;
use super::server::ServerShared;

pub(super) struct HearthClient {
    server: Arc<ServerShared>,
}

impl HearthClient {
    pub(super) fn new(server: Arc<ServerShared>) -> Self {
        HearthClient { server }
    }
}

impl ClientHandler for HearthClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        // A server may change what it offers by what the client can do (server-everything
        // only offers its elicitation tool to clients that can answer), so hearth claims
        // elicitation only when someone will actually answer.
        if self.server.options.elicitation.is_some() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        // The newest revision that still has the `initialize` handshake: there, a server's
        // question is a request of its own, answered while the tool call waits, which is
        // what the call tracking and the paused call timeout are built on.
        ClientConfig::new(
            capabilities,
            Implementation::new("hearth", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // Over streamable HTTP the question arrives on the stream of the call it is for.
        let origin = match context.extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => Some(id.clone()),
            _ => None,
        };
        let (member, _question) = self.server.calls.question_asked(origin.as_ref());
        Ok(answer_elicitation(
            self.server.options.elicitation.as_ref(),
            &self.server.id,
            request,
            member,
        )
        .await)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.server.tool_list_changed();
    }
}
