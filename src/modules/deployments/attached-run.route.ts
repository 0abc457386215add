import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import type { App } from '../../platform/http/types.js';
import type { AttachedStdio } from '../../platform/runtime/port.js';
import type { OneOffRunsService } from '../../pipeline/index.js';
import type { AttachedRunQuery } from './one-off-runs.schemas.js';
import { RUN_FRAME, RUN_STREAM_TYPE, runFrame } from './run-stream.js';

/**
 * The HTTP side of attached runs: the request body stays a stream (the command's standard
 * input, read only as fast as the command reads it), the response carries its output in frames
 * (./run-stream.ts), written only as fast as the caller reads (the process is paused meanwhile).
 * A caller that goes away ends the command; so does the server closing.
 */
export function attachedRunStreams(app: App, runs: OneOffRunsService) {
  // Only this plugin's routes: the body of an attached run is handed over unread.
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));
  const open = new Set<AbortController>();
  app.addHook('preClose', async () => {
    for (const controller of open) controller.abort();
  });

  return {
    async serve(
      request: FastifyRequest,
      reply: FastifyReply,
      userId: string,
      applicationId: string,
      query: Static<typeof AttachedRunQuery>,
    ) {
      const run = await runs.attached.open(userId, applicationId, query);
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'content-type': RUN_STREAM_TYPE,
        'x-slipway-run-id': run.id,
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
      });
      raw.flushHeaders();
      const controller = new AbortController();
      open.add(controller);
      raw.once('close', () => {
        if (!raw.writableFinished) controller.abort();
      });
      const body = request.body;
      const io: AttachedStdio = {
        stdin: body instanceof Readable ? body : Readable.from([]),
        ...(query.tty ? { tty: { rows: query.rows ?? 24, cols: query.cols ?? 80, term: query.term ?? 'xterm-256color' } } : {}),
        // A closed connection takes everything written (the run is being ended).
        write: (stream, bytes) => raw.destroyed || raw.write(runFrame(RUN_FRAME[stream], bytes)),
        drained: (resume) => {
          const done = () => {
            raw.off('drain', done);
            raw.off('close', done);
            resume();
          };
          raw.once('drain', done);
          raw.once('close', done);
        },
      };
      try {
        const end = await runs.attached.run(run, io, controller.signal);
        if (!raw.destroyed) raw.end(runFrame(RUN_FRAME.end, JSON.stringify(end)));
      } finally {
        open.delete(controller);
      }
    },
  };
}
