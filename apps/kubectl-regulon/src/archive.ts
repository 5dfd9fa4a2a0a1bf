// The two archive formats `report` writes, from files held in memory. Written
// here rather than taken from a dependency: a support bundle needs regular
// files only (no links, modes, owners or streaming of huge inputs), and each
// format's writer for that is a few dozen lines over node:zlib (gzip, deflate,
// crc32), which a reviewer can check against its specification: POSIX ustar
// for tar, PKWARE's APPNOTE for zip. tar, unzip and Python's zipfile read them
// in the tests.
import { crc32, deflateRawSync, gzipSync } from 'node:zlib';

export interface ArchiveEntry {
  /** Relative, `/`-separated. */
  path: string;
  content: string | Buffer;
}

const bytes = (c: string | Buffer) => (typeof c === 'string' ? Buffer.from(c, 'utf8') : c);

/** A ustar archive, gzipped: each file a 512-byte header and its content padded to 512 bytes. */
export function tarGz(entries: readonly ArchiveEntry[], mtime: Date): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const data = bytes(e.content);
    blocks.push(tarHeader(e.path, data.length, mtime), data);
    const pad = (512 - (data.length % 512)) % 512;
    if (pad) blocks.push(Buffer.alloc(pad));
  }
  blocks.push(Buffer.alloc(1024)); // two zero blocks end the archive
  return gzipSync(Buffer.concat(blocks));
}

function tarHeader(path: string, size: number, mtime: Date): Buffer {
  const h = Buffer.alloc(512);
  const { name, prefix } = splitTarPath(path);
  const put = (text: string, offset: number, length: number) => h.write(text, offset, length, 'utf8');
  put(name, 0, 100);
  put('0000644\0', 100, 8); // mode
  put('0000000\0', 108, 8); // uid
  put('0000000\0', 116, 8); // gid
  put(`${size.toString(8).padStart(11, '0')}\0`, 124, 12);
  put(
    `${Math.floor(mtime.getTime() / 1000)
      .toString(8)
      .padStart(11, '0')}\0`,
    136,
    12,
  );
  put('        ', 148, 8); // the checksum counts its own field as spaces
  put('0', 156, 1); // a regular file
  put('ustar\0', 257, 6);
  put('00', 263, 2);
  put(prefix, 345, 155);
  let sum = 0;
  for (const b of h) sum += b;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return h;
}

/** ustar's name (100 bytes) and prefix (155), split at a slash; longer paths do not occur here (names are bounded). */
export function splitTarPath(path: string): { name: string; prefix: string } {
  if (Buffer.byteLength(path) <= 100) return { name: path, prefix: '' };
  for (let i = path.lastIndexOf('/'); i > 0; i = path.lastIndexOf('/', i - 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100) return { name, prefix };
  }
  throw new Error(`a path too long for a tar archive: ${path}`);
}

/** A zip archive: each file deflated, UTF-8 names, then the central directory. */
export function zip(entries: readonly ArchiveEntry[], mtime: Date): Buffer {
  const { time, date } = dosTime(mtime);
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.path, 'utf8');
    const data = bytes(e.content);
    const packed = deflateRawSync(data);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed: 2.0 (deflate)
    local.writeUInt16LE(0x0800, 6); // bit 11: the name is UTF-8
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt16LE(time, 10);
    local.writeUInt16LE(date, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    locals.push(local, name, packed);
    const dir = Buffer.alloc(46);
    dir.writeUInt32LE(0x02014b50, 0);
    dir.writeUInt16LE(0x031e, 4); // made by: unix, 3.0
    dir.writeUInt16LE(20, 6);
    dir.writeUInt16LE(0x0800, 8);
    dir.writeUInt16LE(8, 10);
    dir.writeUInt16LE(time, 12);
    dir.writeUInt16LE(date, 14);
    dir.writeUInt32LE(crc, 16);
    dir.writeUInt32LE(packed.length, 20);
    dir.writeUInt32LE(data.length, 24);
    dir.writeUInt16LE(name.length, 28);
    dir.writeUInt32LE((0o100644 << 16) >>> 0, 38); // external attributes: a regular file, rw-r--r--
    dir.writeUInt32LE(offset, 42);
    central.push(dir, name);
    offset += local.length + name.length + packed.length;
  }
  const dirSize = central.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(dirSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...central, end]);
}

/** MS-DOS time and date (local fields, 2-second steps), from the UTC time: a bundle says UTC everywhere. */
function dosTime(d: Date): { time: number; date: number } {
  return {
    time: (d.getUTCHours() << 11) | (d.getUTCMinutes() << 5) | Math.floor(d.getUTCSeconds() / 2),
    date: ((Math.max(d.getUTCFullYear(), 1980) - 1980) << 9) | ((d.getUTCMonth() + 1) << 5) | d.getUTCDate(),
  };
}
