// The application the add-on backup tests deploy (test/addons/backups*.test.ts).

/** The application: `/write?v=…` inserts a row into its add-on's `notes` table. */
export const SERVER = String.raw`
import http.server, os, subprocess, urllib.parse

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        data = b'ok'
        if url.path == '/write':
            sql = "CREATE TABLE IF NOT EXISTS notes (v text); INSERT INTO notes VALUES ('" + q['v'] + "')"
            p = subprocess.run(['psql', os.environ.get('DATABASE_URL', 'missing'), '-Atc', sql], capture_output=True, text=True, timeout=20)
            data = (p.stdout.strip() if p.returncode == 0 else 'error: ' + p.stderr.strip()[-300:]).encode()
        self.send_response(200)
        self.send_header('content-length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(('127.0.0.1', int(os.environ['PORT'])), Handler).serve_forever()
`;

/** The release command (migrations): drops the table when DROP_NOTES is set, a bad migration. */
export const RELEASE = String.raw`
import os, subprocess, sys
if os.environ.get('DROP_NOTES'):
    sys.exit(subprocess.run(['psql', os.environ['DATABASE_URL'], '-c', 'DROP TABLE notes']).returncode)
`;
