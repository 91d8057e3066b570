"""An asyncio service whose requests each make one round trip to a dependency, over LANES
connections, loaded by CLIENTS closed-loop clients from another process.

The dependency is a child process that answers each line after STORE_MS. The service (this
process, one thread: the event loop) accepts the clients' connections and, per request,
takes a connection from a pool of LANES (an asyncio.Queue of connections), sends the line,
awaits the answer and replies. With fewer lanes than clients the requests queue inside the
process for a connection; with as many, each waits only on the dependency. It prints
"ready PORT" once the clients run. Usage: asyncio_lanes.py SECONDS LANES CLIENTS [STORE_MS]
"""

import asyncio
import multiprocessing
import socket
import sys
import time


def store(port_out, delay_s):
    async def serve(reader, writer):
        while await reader.readline():
            await asyncio.sleep(delay_s)
            writer.write(b"features\n")
            await writer.drain()

    async def main():
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port_out.send(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


def clients(port, n, seconds):
    def one():
        with socket.create_connection(("127.0.0.1", port)) as s:
            f = s.makefile("rb")
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                s.sendall(b"score u42\n")
                if not f.readline():
                    return

    import threading

    threads = [threading.Thread(target=one, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


async def service(seconds, lanes, n_clients, store_port):
    pool: asyncio.Queue = asyncio.Queue()
    for _ in range(lanes):
        pool.put_nowait(await asyncio.open_connection("127.0.0.1", store_port))

    async def handle(reader, writer):
        while line := await reader.readline():
            conn_r, conn_w = await pool.get()
            try:
                conn_w.write(line)
                await conn_w.drain()
                answer = await conn_r.readline()
            finally:
                pool.put_nowait((conn_r, conn_w))
            writer.write(answer)
            await writer.drain()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    load = multiprocessing.Process(target=clients, args=(port, n_clients, seconds), daemon=True)
    load.start()
    print("ready", port, flush=True)
    await asyncio.sleep(seconds)
    load.kill()


def main():
    seconds, lanes, n_clients = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    delay_s = (float(sys.argv[4]) if len(sys.argv) > 4 else 20.0) / 1000
    recv, send = multiprocessing.Pipe(duplex=False)
    dep = multiprocessing.Process(target=store, args=(send, delay_s), daemon=True)
    dep.start()
    port = recv.recv()
    try:
        asyncio.run(service(seconds, lanes, n_clients, port))
    finally:
        dep.kill()


if __name__ == "__main__":
    main()
