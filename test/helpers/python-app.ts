/**
 * `server.py` of a tiny Python HTTP app: listens on 127.0.0.1:$PORT and answers every GET
 * with the text of `body`, a Python expression (it may use `os`, `hashlib` and names
 * `setup` defines). Python 3 is all it needs, so the source builder can run it as is.
 */
export function pythonHttpApp(body: string, setup = ''): string {
  return `
import http.server, os, hashlib
${setup}
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (${body}).encode()
        self.send_response(200)
        self.send_header('content-type', 'text/plain')
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', int(os.environ['PORT'])), Handler).serve_forever()
`;
}
