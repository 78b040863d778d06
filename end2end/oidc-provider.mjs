// A real OpenID Provider for the tests (npm oidc-provider, its own
// development login and consent pages), on 127.0.0.1.
//
// Environment: OIDC_PORT (0: any free port), OIDC_REDIRECT_URI (the one
// client's redirect URI), OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, and
// OIDC_ACCOUNTS: a JSON file of accounts, read again at every sign-in so a
// test can change someone's groups between two sign-ins:
//   {"alice": {"groups": ["reckon-admins"], "email": "alice@example.com"}}
// The account's login is its subject and its preferred_username; any
// password signs in. OIDC_HOST names the issuer's host (default 127.0.0.1;
// `localhost` puts the provider on another site than a console on
// 127.0.0.1, as a real provider is). Prints `issuer <URL>` once it listens.
import fs from 'node:fs';
import Provider from 'oidc-provider';

const need = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`oidc-provider.mjs: ${name} is not set`);
    process.exit(2);
  }
  return value;
};
const redirectUri = need('OIDC_REDIRECT_URI');
const clientId = need('OIDC_CLIENT_ID');
const clientSecret = need('OIDC_CLIENT_SECRET');
const accountsFile = need('OIDC_ACCOUNTS');

const accounts = () => JSON.parse(fs.readFileSync(accountsFile, 'utf8'));

function configuration() {
  return {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    // Every authorization request must carry a PKCE S256 challenge.
    pkce: { required: () => true },
    // The groups travel with the profile scope, in the ID token itself.
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name', 'groups'],
      email: ['email'],
    },
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ['reckon-tests-only'] },
    async findAccount(_ctx, id) {
      const account = accounts()[id];
      if (!account) return undefined;
      return {
        accountId: id,
        async claims() {
          return {
            sub: id,
            preferred_username: account.preferred_username ?? id,
            name: id,
            email: account.email,
            groups: account.groups ?? [],
          };
        },
      };
    },
  };
}

// The issuer names the port, so a free one is found first.
const probe = (await import('node:net')).createServer();
const port = await new Promise((resolve) => {
  probe.listen(Number(process.env.OIDC_PORT || 0), '127.0.0.1', () => {
    const { port: p } = probe.address();
    probe.close(() => resolve(p));
  });
});
const issuer = `http://${process.env.OIDC_HOST || '127.0.0.1'}:${port}`;
const provider = new Provider(issuer, configuration());
provider.on('server_error', (_ctx, err) => console.error('server_error', err));
provider.listen(port, '127.0.0.1', () => {
  console.log(`issuer ${issuer}`);
});
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
