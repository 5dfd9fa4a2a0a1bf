// The Database controller alone in a process, for the replication suite's
// partition scenario (see @regulon/conventions' runManagerProcess).
import { runManagerProcess } from '@regulon/conventions';
import { ImageCatalog } from '@regulon/image-catalog';
import { setupDatabaseController } from '../index.ts';

await runManagerProcess((mgr, options) => {
  const { catalog, instanceAgentImage } = options as { catalog: unknown; instanceAgentImage?: string };
  setupDatabaseController(mgr, {
    imageCatalog: ImageCatalog.fromDocument(catalog, 'the test manager process'),
    instanceAgentImage,
  });
});
