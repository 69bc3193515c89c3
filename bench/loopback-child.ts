/** The loopback endpoint in a process of its own (bench/publishing.ts's floor jobs): sends its URL, stops on disconnect. */
import { startLoopbackPlatform } from './loopback-platform.js';

const platform = await startLoopbackPlatform();
process.send!(platform.url);
process.on('disconnect', () => void platform.stop().then(() => process.exit(0)));
