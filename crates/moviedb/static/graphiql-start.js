// Starts GraphiQL against this server's /graphql (queries over POST, subscriptions over a
// WebSocket on the same path). Sign in with the `login` mutation, then put
// {"Authorization": "Bearer <token>"} in the Headers tab.
"use strict";
const here = new URL("/graphql", window.location.href);
const socket = new URL(here);
socket.protocol = here.protocol === "https:" ? "wss:" : "ws:";
const fetcher = GraphiQL.createFetcher({ url: here.toString(), subscriptionUrl: socket.toString() });
const firstQuery = `# Sign in to review or keep a watch list:
#   mutation { login(input: {username: "user", password: "user123"}) { token } }
# then add {"Authorization": "Bearer <token>"} in Headers below.

{
  recommendMoviesForMood(mood: COMFORT) {
    title
    releaseYear
    averageRating
  }
}
`;
ReactDOM.createRoot(document.getElementById("graphiql")).render(
  React.createElement(GraphiQL, { fetcher, defaultQuery: firstQuery, defaultEditorToolsVisibility: true }),
);
