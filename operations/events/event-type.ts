import { z } from 'zod';
import { EVENT_TYPE_NAMES } from './types.js';

/** An event type, as inputs and outputs declare it. */
export const eventType = z.enum(EVENT_TYPE_NAMES as [string, ...string[]]);
