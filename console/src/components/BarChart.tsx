import { BarController, BarElement, CategoryScale, Chart, LinearScale, Tooltip } from 'chart.js';
import { useEffect, useRef } from 'react';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip);

/** Values are whole kopecks: ticks at whole kopecks only (`precision: 0`), so a small spend does not repeat one label. */

/**
 * A bar chart (Chart.js on a canvas). The canvas is an image to assistive technology, described by `label`; the
 * same figures are in a table next to it for anyone who cannot see the chart.
 */
export function BarChart(props: {
  label: string;
  labels: string[];
  values: number[];
  format(value: number): string;
  horizontal?: boolean;
}) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart<'bar'> | null>(null);
  const { labels, values, format, horizontal } = props;

  useEffect(() => {
    if (!canvas.current) return;
    chart.current = new Chart(canvas.current, {
      type: 'bar',
      data: { labels: [], datasets: [{ data: [], backgroundColor: '#3b6fd8', borderRadius: 3 }] },
      options: {
        indexAxis: horizontal ? 'y' : 'x',
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        plugins: { tooltip: { callbacks: { label: (item) => format(Number(item.raw)) } } },
        scales: {
          [horizontal ? 'x' : 'y']: {
            beginAtZero: true,
            ticks: { precision: 0, callback: (value: string | number) => format(Number(value)) },
          },
        },
      },
    });
    return () => {
      chart.current?.destroy();
      chart.current = null;
    };
  }, [horizontal, format]);

  useEffect(() => {
    if (!chart.current) return;
    chart.current.data.labels = labels;
    chart.current.data.datasets[0]!.data = values;
    chart.current.update();
  }, [labels, values]);

  return (
    <div className="chart">
      <canvas ref={canvas} role="img" aria-label={props.label} />
    </div>
  );
}
