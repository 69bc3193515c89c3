import { render } from 'preact';
import { App } from './app.js';

// The shell (src/http/dashboard.ts) holds one <div id="app">; everything else is drawn here.
render(<App />, document.getElementById('app')!);
