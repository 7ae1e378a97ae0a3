// refresh-1: OAuth-style refresh-token rotation with reuse detection, and a
// client that refreshes without single flight (see README.md).
//
// One program with modes: auth, api, client. Line protocol over TCP; each
// connection answers requests in order.
'use strict';
const net = require('net');

const VALID_MS = 60; // an access token's life

function log(...parts) { console.log(...parts); }

// eachLine calls onLine for every complete line c receives.
function eachLine(c, onLine) {
  let buf = '';
  c.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      onLine(line);
    }
  });
}

// serve calls onLine(line, reply) for every line of every connection.
function serve(port, onLine) {
  net.createServer((c) => {
    eachLine(c, (line) => onLine(line, (r) => c.write(r + '\n')));
    c.on('error', () => {});
  }).listen(port);
}

// dial connects to host:port, retrying while it is not up, and returns
// ask(line) → Promise of the reply (replies come in order).
function dial(hostport) {
  const [host, port] = hostport.split(':');
  return new Promise((resolve) => {
    const attempt = () => {
      const c = net.connect(Number(port), host);
      const waiting = [];
      c.on('error', () => { if (!c.connected) setTimeout(attempt, 5); });
      c.on('connect', () => {
        c.connected = true;
        resolve((line) => new Promise((r) => { waiting.push(r); c.write(line + '\n'); }));
      });
      eachLine(c, (line) => waiting.shift()(line));
      c.on('close', () => { if (c.connected) { console.error('connection to ' + hostport + ' closed'); process.exit(2); } });
    };
    attempt();
  });
}

// auth issues an access token (valid VALID_MS, checked by the api on its
// own: it carries its expiry) and a refresh token per session. A refresh
// rotates both; a refresh token used twice means it was stolen, and the
// whole session is revoked (reuse detection, as OAuth 2.0 Security BCP
// and the big identity providers do).
function auth(port) {
  const sessions = new Map(); // session → {n, revoked}
  let next = 0;
  const tokens = (s, st) => {
    st.n++;
    return `TOKENS at.${s}.${st.n}.${Date.now() + VALID_MS} rt.${s}.${st.n}`;
  };
  serve(port, (line, reply) => {
    const w = line.split(' ');
    if (w[0] === 'LOGIN') {
      const s = String(++next);
      const st = { n: 0, revoked: false };
      sessions.set(s, st);
      log(`auth: ${w[1]} logged in, session ${s}`);
      reply(tokens(s, st));
    } else if (w[0] === 'REFRESH') {
      const [, s, n] = w[1].split('.');
      const st = sessions.get(s);
      if (!st || st.revoked) {
        reply('REVOKED');
      } else if (Number(n) !== st.n) {
        st.revoked = true;
        log(`auth: refresh token ${w[1]} used again (current ${st.n}): session ${s} revoked`);
        reply('REVOKED');
      } else {
        reply(tokens(s, st));
        log(`auth: session ${s} refreshed to ${st.n}`);
      }
    }
  });
}

function api(port) {
  serve(port, (line, reply) => {
    const [, item, at] = line.split(' ');
    const exp = Number(at.split('.')[3]);
    if (Date.now() > exp) {
      reply('401 expired');
      return;
    }
    reply(`200 ${item}`);
  });
}

// client: two workers, each asking the api for an item every 50 ms, the
// second 25 ms after the first; on a 401 a worker refreshes the session's
// tokens, unless another worker already did since it sent its request.
async function client(authAddr, apiAddr, rounds, fixed) {
  const authAsk = await dial(authAddr);
  const apiAsk = await dial(apiAddr);
  let [, at, rt] = (await authAsk('LOGIN alice')).split(' ');
  let refreshing = null;
  const refresh = async () => {
    const t = await authAsk(`REFRESH ${rt}`);
    if (t === 'REVOKED') {
      console.error(`logged out: the session was revoked at refresh (refresh token ${rt})`);
      process.exit(1);
    }
    [, at, rt] = t.split(' ');
    log(`client: refreshed to ${rt}`);
  };
  const get = async (item) => {
    for (;;) {
      const used = at;
      const r = await apiAsk(`GET ${item} ${used}`);
      if (r.startsWith('200')) return;
      if (at !== used) continue; // refreshed meanwhile: try the new token
      if (fixed) {
        // Single flight: one refresh at a time, every worker waits for it.
        if (!refreshing) refreshing = refresh().finally(() => { refreshing = null; });
        await refreshing;
      } else {
        await refresh();
      }
    }
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const worker = async (name, offset) => {
    await sleep(offset);
    for (let i = 1; i <= rounds; i++) {
      await get(`${name}.${i}`);
      log(`client: ${name} got item ${i}`);
      await sleep(50);
    }
  };
  await Promise.all([worker('w1', 0), worker('w2', 25)]);
  log('client: done');
  process.exit(0);
}

const [mode, ...args] = process.argv.slice(2);
const fixed = args.includes('--fixed');
const rest = args.filter((a) => a !== '--fixed');
if (mode === 'auth' && rest.length === 1) auth(Number(rest[0]));
else if (mode === 'api' && rest.length === 1) api(Number(rest[0]));
else if (mode === 'client' && rest.length === 3) client(rest[0], rest[1], Number(rest[2]), fixed);
else {
  console.error('usage: refresh1 auth PORT | api PORT | client AUTH API ROUNDS [--fixed]');
  process.exit(2);
}
