// `npm run build`: the content trees from node/ui/src into dist/site/<level>/.
import { join, resolve } from 'node:path';
import { writeSite } from '../node/ui/site.ts';

const root = resolve(import.meta.dirname, '..');
writeSite(join(root, 'node/ui/src'), join(root, 'dist/site'));
process.stdout.write('dist/site: content trees 1-3 written\n');
